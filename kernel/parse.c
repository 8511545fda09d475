// SPDX-License-Identifier: GPL-2.0
/*
 * The receiving device's parser: what it reads of a frame's headers to cut it
 * (header split) and to verify its TCP or UDP checksum. It reads the device's
 * own copy of the frame, never the sender's skb or its metadata: a raw or
 * packet socket sets those as it likes, and a PACKET_TX_RING sender can
 * change its frame's bytes until the device has copied them. Every length it
 * reads is bounded by the frame: a frame whose lengths point past its end, or
 * below their minimum, is malformed and the device drops it. Frames it does
 * not understand (ARP, other L3 or L4 protocols, IP fragments, headers longer
 * than a header buffer) are not malformed: they go up whole, unsplit and
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

/*
 * @n bytes at @off of a frame of @len bytes, of which @skb holds the first:
 * NULL and malformed when the frame is shorter, NULL and unparsed when the
 * bytes are past what the parser was given.
 */
static const void *devtcp_hdr(const struct sk_buff *skb, unsigned int len, unsigned int off,
			      unsigned int n, void *buf, struct devtcp_parse *p)
{
	const void *h;

	if (off > len || n > len - off) {
		p->malformed = true;
		return NULL;
	}
	h = skb_header_pointer(skb, off, n, buf);
	if (!h)
		p->unparsed = true;
	return h;
}

static void devtcp_parse_l4(const struct sk_buff *skb, unsigned int len, unsigned int off,
			    unsigned int seg, u8 proto, struct devtcp_parse *p)
{
	const struct tcphdr *th;
	const struct udphdr *uh;
	struct tcphdr _th;
	struct udphdr _uh;
	unsigned int hl;

	switch (proto) {
	case IPPROTO_TCP:
		if (seg < sizeof(_th))
			goto malformed;
		th = devtcp_hdr(skb, len, off, sizeof(_th), &_th, p);
		if (!th)
			return;
		hl = th->doff * 4;
		if (hl < sizeof(_th) || hl > seg)
			goto malformed;
		break;
	case IPPROTO_UDP:
		if (seg < sizeof(_uh))
			goto malformed;
		uh = devtcp_hdr(skb, len, off, sizeof(_uh), &_uh, p);
		if (!uh)
			return;
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

static void devtcp_parse_ipv4(const struct sk_buff *skb, unsigned int len, unsigned int off,
			      struct devtcp_parse *p)
{
	const struct iphdr *iph;
	struct iphdr _iph;
	unsigned int ihl, tot;

	iph = devtcp_hdr(skb, len, off, sizeof(_iph), &_iph, p);
	if (!iph)
		return;
	ihl = iph->ihl * 4;
	tot = ntohs(iph->tot_len);
	if (iph->version != 4 || ihl < sizeof(_iph) || tot < ihl || tot > len - off)
		goto malformed;
	p->hdr_len = off + ihl;
	/* Only a whole datagram has an L4 header to cut after or verify. */
	if (ip_is_fragment(iph))
		return;
	/* A source route's pseudo-header holds its last hop: the stack's. */
	p->verifiable = ihl == sizeof(_iph);
	p->options = ihl != sizeof(_iph);
	p->pseudo = csum_tcpudp_nofold(iph->saddr, iph->daddr, tot - ihl, iph->protocol, 0);
	devtcp_parse_l4(skb, len, off + ihl, tot - ihl, iph->protocol, p);
	return;

malformed:
	p->malformed = true;
}

static void devtcp_parse_ipv6(const struct sk_buff *skb, unsigned int len, unsigned int off,
			      struct devtcp_parse *p)
{
	const struct ipv6hdr *ip6h;
	struct ipv6hdr _ip6h;
	unsigned int end, i;
	bool routed = false;
	u8 next;

	ip6h = devtcp_hdr(skb, len, off, sizeof(_ip6h), &_ip6h, p);
	if (!ip6h)
		return;
	end = off + sizeof(_ip6h) + ntohs(ip6h->payload_len);
	if (ip6h->version != 6 || end > len)
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
			if (end - off < sizeof(_eh))
				goto malformed;
			eh = devtcp_hdr(skb, len, off, sizeof(_eh), &_eh, p);
			if (!eh)
				return;
			elen = ipv6_optlen(eh);
			if (elen > end - off)
				goto malformed;
			routed |= next == NEXTHDR_ROUTING;
			p->options = true;
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
		devtcp_parse_l4(skb, len, off, end - off, next, p);
		return;
	}
	p->hdr_len = off;	/* more extension headers than the parser walks */
	return;

malformed:
	p->malformed = true;
}

/*
 * Parses a frame of @len bytes whose first bytes @skb holds (all of them, or
 * a header buffer's worth): p->unparsed when its headers run past those.
 */
void devtcp_parse(const struct sk_buff *skb, unsigned int len, struct devtcp_parse *p)
{
	unsigned int off = ETH_HLEN, i;
	const __be16 *proto;
	__be16 _proto;

	memset(p, 0, sizeof(*p));
	proto = devtcp_hdr(skb, len, offsetof(struct ethhdr, h_proto), sizeof(_proto), &_proto, p);
	for (i = 0; proto && i < DEVTCP_PARSE_VLANS && eth_type_vlan(*proto); i++) {
		proto = devtcp_hdr(skb, len, off + offsetof(struct vlan_hdr,
							    h_vlan_encapsulated_proto),
				   sizeof(_proto), &_proto, p);
		off += VLAN_HLEN;
	}
	p->hdr_len = min(off, len);
	if (proto && *proto == htons(ETH_P_IP))
		devtcp_parse_ipv4(skb, len, off, p);
	else if (proto && *proto == htons(ETH_P_IPV6))
		devtcp_parse_ipv6(skb, len, off, p);
	/* Headers past what a header buffer holds: not cut there, not checked. */
	if (p->unparsed || p->hdr_len > DEVTCP_HDR_ROOM) {
		p->proto = 0;
		p->verifiable = false;
		p->hdr_len = min_t(unsigned int, p->hdr_len, DEVTCP_HDR_ROOM);
	}
}
