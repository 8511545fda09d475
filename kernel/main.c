// SPDX-License-Identifier: GPL-2.0
/*
 * devtcp: a software multi-queue NIC pair whose payload path feeds the
 * kernel's devmem memory provider.
 *
 * The module owns one platform device with a 64-bit DMA mask: it is the
 * parent of every devtcp netdev, so buffers are DMA-mapped as for a real NIC
 * (without an IOMMU, DMA addresses are physical addresses).
 */
#include <linux/dma-mapping.h>
#include <linux/kmemleak.h>
#include <linux/module.h>
#include <linux/platform_device.h>
#include <net/rtnetlink.h>

#include "devtcp.h"

static struct platform_device *devtcp_pdev;
static bool devtcp_provider_used;

struct device *devtcp_dma_dev(void)
{
	return &devtcp_pdev->dev;
}

/* A dma-buf was mapped with our device for zero-copy (see devtcp_exit()). */
void devtcp_note_provider(void)
{
	WRITE_ONCE(devtcp_provider_used, true);
}

static int __init devtcp_init(void)
{
	int err;

	devtcp_pdev = platform_device_register_simple("devtcp", PLATFORM_DEVID_NONE,
						      NULL, 0);
	if (IS_ERR(devtcp_pdev))
		return PTR_ERR(devtcp_pdev);

	err = dma_coerce_mask_and_coherent(&devtcp_pdev->dev, DMA_BIT_MASK(64));
	if (err)
		goto err_pdev;
	/*
	 * The device model copies any length to any address: dma-bufs mapped
	 * for bindings may have segments of any size and alignment (the 64 KiB
	 * default made DMA-API debugging warn on a udmabuf's larger ones).
	 */
	dma_set_max_seg_size(&devtcp_pdev->dev, UINT_MAX);
	dma_set_seg_boundary(&devtcp_pdev->dev, ULONG_MAX);

	err = devtcp_link_init();
	if (err)
		goto err_pdev;
	return 0;

err_pdev:
	platform_device_unregister(devtcp_pdev);
	return err;
}

static void __exit devtcp_exit(void)
{
	devtcp_link_exit();
	/*
	 * A devmem binding (RX or TX) or io_uring area outlives our devices
	 * while sockets still hold its buffers, and when it is freed at last
	 * it unmaps its dma-buf from our device, on which it holds no
	 * reference. Once one has been made, the device is unregistered but
	 * its memory is kept.
	 */
	if (READ_ONCE(devtcp_provider_used)) {
		get_device(&devtcp_pdev->dev);
		kmemleak_not_leak(devtcp_pdev);
	}
	platform_device_unregister(devtcp_pdev);
}

module_init(devtcp_init);
module_exit(devtcp_exit);

MODULE_DESCRIPTION("devtcp: software NIC for device-memory TCP");
MODULE_LICENSE("GPL");
MODULE_ALIAS_RTNL_LINK("devtcp");
