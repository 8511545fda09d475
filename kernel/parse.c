// SPDX-License-Identifier: GPL-2.0
/*
 * The receiving device's parser: what it reads of a frame's headers to cut it
 * (header split) and to verify its TCP or UDP checksum. It reads the bytes on
 * the wire, never the sender's skb metadata, which a raw or packet socket
 * sets as it likes, and it bounds every length it reads by the frame: a frame
 * whose lengths point past its end, or below their minimum, is malformed and
 * the device drops it. Frames it does not understand (ARP, other L3 or L4
 * protocols, IP fragments) are not malformed: they go up whole, unsplit and
 * unverified, for the stack to judge.
 */
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <net/checksum.h>
#include <net/ip.h>
#include <net/ip6_checksum.h>
#include <net/ipv6.h>

#include "devtcp.h"

/* VLAN tags and IPv6 extension headers the parser walks, as NICs bound theirs. */
#define DEVTCP_PARSE_VLANS	2
#define DEVTCP_PARSE_IPV6_EXTS	8

static void devtcp_parse_l4(const struct sk_buff *skb, unsigned int off, unsigned int seg,
			    u8 proto, struct devtcp_parse *p)
{
	const struct tcphdr *th;
	const struct udphdr *uh;
	struct tcphdr _th;
	struct udphdr _uh;
	unsigned int hl;

	switch (proto) {
	case IPPROTO_TCP:
		th = seg >= sizeof(_th) ? skb_header_pointer(skb, off, sizeof(_th), &_th) : NULL;
		if (!th)
			goto malformed;
		hl = th->doff * 4;
		if (hl < sizeof(_th) || hl > seg)
			goto malformed;
		break;
	case IPPROTO_UDP:
		uh = seg >= sizeof(_uh) ? skb_header_pointer(skb, off, sizeof(_uh), &_uh) : NULL;
		if (!uh)
			goto malformed;
		hl = sizeof(_uh);
		/*
		 * The stack trims to the UDP length or drops; a zero checksum
		 * is none (IPv4) or allowed per socket (IPv6 tunnels). Either
		 * way: the stack's call.
		 */
		if (ntohs(uh->len) != seg || !uh->check)
			p->verifiable = false;
		break;
	default:
		return;
	}
	p->hdr_len = off + hl;
	p->l4_off = off;
	p->l4_len = seg;
	p->proto = proto;
	return;

malformed:
	p->malformed = true;
}

static void devtcp_parse_ipv4(const struct sk_buff *skb, unsigned int off,
			      struct devtcp_parse *p)
{
	const struct iphdr *iph;
	struct iphdr _iph;
	unsigned int ihl, tot;

	iph = skb_header_pointer(skb, off, sizeof(_iph), &_iph);
	if (!iph)
		goto malformed;
	ihl = iph->ihl * 4;
	tot = ntohs(iph->tot_len);
	if (iph->version != 4 || ihl < sizeof(_iph) || tot < ihl || tot > skb->len - off)
		goto malformed;
	p->hdr_len = off + ihl;
	/* Only a whole datagram has an L4 header to cut after or verify. */
	if (ip_is_fragment(iph))
		return;
	p->verifiable = true;
	p->pseudo = csum_tcpudp_nofold(iph->saddr, iph->daddr, tot - ihl, iph->protocol, 0);
	devtcp_parse_l4(skb, off + ihl, tot - ihl, iph->protocol, p);
	return;

malformed:
	p->malformed = true;
}

static void devtcp_parse_ipv6(const struct sk_buff *skb, unsigned int off,
			      struct devtcp_parse *p)
{
	const struct ipv6hdr *ip6h;
	struct ipv6hdr _ip6h;
	unsigned int end, i;
	bool routed = false;
	u8 next;

	ip6h = skb_header_pointer(skb, off, sizeof(_ip6h), &_ip6h);
	if (!ip6h || ip6h->version != 6)
		goto malformed;
	end = off + sizeof(_ip6h) + ntohs(ip6h->payload_len);
	if (end > skb->len)
		goto malformed;
	p->ipv6 = true;
	next = ip6h->nexthdr;
	off += sizeof(_ip6h);
	for (i = 0; i < DEVTCP_PARSE_IPV6_EXTS; i++) {
		const struct ipv6_opt_hdr *eh;
		struct ipv6_opt_hdr _eh;
		unsigned int elen;

		p->hdr_len = off;
		switch (next) {
		case NEXTHDR_HOP:
		case NEXTHDR_ROUTING:
		case NEXTHDR_DEST:
			eh = end - off >= sizeof(_eh) ?
			     skb_header_pointer(skb, off, sizeof(_eh), &_eh) : NULL;
			if (!eh)
				goto malformed;
			elen = ipv6_optlen(eh);
			if (elen > end - off)
				goto malformed;
			routed |= next == NEXTHDR_ROUTING;
			next = eh->nexthdr;
			off += elen;
			continue;
		case NEXTHDR_FRAGMENT:
			if (end - off < sizeof(struct frag_hdr))
				goto malformed;
			p->hdr_len = off + sizeof(struct frag_hdr);
			return;
		}
		/*
		 * With a routing header the pseudo-header holds the final
		 * destination, not this one: the stack verifies such frames.
		 */
		p->verifiable = !routed;
		p->pseudo = ~csum_unfold(csum_ipv6_magic(&ip6h->saddr, &ip6h->daddr, end - off,
							 next, 0));
		devtcp_parse_l4(skb, off, end - off, next, p);
		return;
	}
	p->hdr_len = off;	/* more extension headers than the parser walks */
	return;

malformed:
	p->malformed = true;
}

void devtcp_parse(const struct sk_buff *skb, struct devtcp_parse *p)
{
	unsigned int off = ETH_HLEN, i;
	__be16 _proto;
	const __be16 *proto;

	memset(p, 0, sizeof(*p));
	proto = skb_header_pointer(skb, offsetof(struct ethhdr, h_proto), sizeof(_proto), &_proto);
	if (!proto) {
		p->hdr_len = skb->len;
		p->malformed = true;
		return;
	}
	for (i = 0; i < DEVTCP_PARSE_VLANS && eth_type_vlan(*proto); i++) {
		proto = skb_header_pointer(skb, off + offsetof(struct vlan_hdr,
							       h_vlan_encapsulated_proto),
					   sizeof(_proto), &_proto);
		if (!proto) {
			p->hdr_len = skb->len;
			p->malformed = true;
			return;
		}
		off += VLAN_HLEN;
	}
	p->hdr_len = off;
	if (*proto == htons(ETH_P_IP))
		devtcp_parse_ipv4(skb, off, p);
	else if (*proto == htons(ETH_P_IPV6))
		devtcp_parse_ipv6(skb, off, p);
	/* Headers longer than a header buffer holds: not cut there, not checked. */
	if (p->hdr_len > DEVTCP_HDR_ROOM) {
		p->proto = 0;
		p->verifiable = false;
	}
}
