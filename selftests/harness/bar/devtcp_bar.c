// SPDX-License-Identifier: GPL-2.0
/*
 * Test exporter (selftests only, never installed): memory like a GPU's.
 * Binds to QEMU's ivshmem-plain device and exports ranges of its BAR 2 (RAM
 * shared with the host) as dma-bufs the way NVIDIA's exporter exports BAR1:
 * an sg table whose entries have no page, only DMA addresses that
 * dma_map_resource() gave for the importer's device. It offers no CPU
 * access (no vmap, no mmap): tests read the BAR through sysfs (resource2).
 */
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "devtcp_bar.h"

#define DEVTCP_BAR		2

/* sg entries of at most this size, as an exporter of scattered VRAM makes. */
static unsigned int seg_size = SZ_4M;
module_param(seg_size, uint, 0444);
MODULE_PARM_DESC(seg_size, "bytes per sg entry (a multiple of the page size)");

static struct pci_dev *devtcp_bar_pdev;	/* the one device served */
static DEFINE_MUTEX(devtcp_bar_lock);

struct devtcp_bar_buf {
	struct pci_dev *pdev;
	phys_addr_t phys;
	size_t size;
};

static unsigned int devtcp_bar_nents(const struct devtcp_bar_buf *b)
{
	return DIV_ROUND_UP(b->size, seg_size);
}

static struct sg_table *devtcp_bar_map(struct dma_buf_attachment *at, enum dma_data_direction dir)
{
	struct devtcp_bar_buf *b = at->dmabuf->priv;
	struct scatterlist *sg;
	struct sg_table *sgt;
	unsigned int i;
	size_t off = 0;
	int err;

	/* After remove the BAR is gone with the device: nothing to map. */
	guard(mutex)(&devtcp_bar_lock);
	if (devtcp_bar_pdev != b->pdev)
		return ERR_PTR(-ENODEV);
	sgt = kzalloc_obj(*sgt);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	err = sg_alloc_table(sgt, devtcp_bar_nents(b), GFP_KERNEL);
	if (err)
		goto err_free;
	/* No sg_set_page(): the entries carry DMA addresses only. */
	for_each_sgtable_dma_sg(sgt, sg, i) {
		size_t len = min_t(size_t, seg_size, b->size - off);
		dma_addr_t dma = dma_map_resource(at->dev, b->phys + off, len, dir,
						  DMA_ATTR_SKIP_CPU_SYNC);

		if (dma_mapping_error(at->dev, dma)) {
			err = -EIO;
			goto err_unmap;
		}
		sg_dma_address(sg) = dma;
		sg_dma_len(sg) = len;
		off += len;
	}
	return sgt;

err_unmap:
	sgt->nents = i;
	for_each_sgtable_dma_sg(sgt, sg, i)
		dma_unmap_resource(at->dev, sg_dma_address(sg), sg_dma_len(sg), dir,
				   DMA_ATTR_SKIP_CPU_SYNC);
	sg_free_table(sgt);
err_free:
	kfree(sgt);
	return ERR_PTR(err);
}

static void devtcp_bar_unmap(struct dma_buf_attachment *at, struct sg_table *sgt,
			     enum dma_data_direction dir)
{
	struct scatterlist *sg;
	unsigned int i;

	for_each_sgtable_dma_sg(sgt, sg, i)
		dma_unmap_resource(at->dev, sg_dma_address(sg), sg_dma_len(sg), dir,
				   DMA_ATTR_SKIP_CPU_SYNC);
	sg_free_table(sgt);
	kfree(sgt);
}

static void devtcp_bar_release(struct dma_buf *dmabuf)
{
	struct devtcp_bar_buf *b = dmabuf->priv;

	pci_dev_put(b->pdev);
	kfree(b);
}

static const struct dma_buf_ops devtcp_bar_ops = {
	.map_dma_buf	= devtcp_bar_map,
	.unmap_dma_buf	= devtcp_bar_unmap,
	.release	= devtcp_bar_release,
};

static struct dma_buf *devtcp_bar_export(const struct devtcp_bar_export *req)
{
	DEFINE_DMA_BUF_EXPORT_INFO(info);
	struct devtcp_bar_buf *b;
	struct dma_buf *dmabuf;
	resource_size_t len;

	guard(mutex)(&devtcp_bar_lock);
	if (!devtcp_bar_pdev)
		return ERR_PTR(-ENODEV);
	len = pci_resource_len(devtcp_bar_pdev, DEVTCP_BAR);
	if (!req->size || !PAGE_ALIGNED(req->size) || !PAGE_ALIGNED(req->offset) ||
	    req->offset > len || req->size > len - req->offset)
		return ERR_PTR(-EINVAL);
	b = kzalloc_obj(*b);
	if (!b)
		return ERR_PTR(-ENOMEM);
	b->pdev = pci_dev_get(devtcp_bar_pdev);
	b->phys = pci_resource_start(devtcp_bar_pdev, DEVTCP_BAR) + req->offset;
	b->size = req->size;
	info.ops = &devtcp_bar_ops;
	info.size = b->size;
	info.flags = O_RDWR;
	info.priv = b;
	dmabuf = dma_buf_export(&info);
	if (IS_ERR(dmabuf)) {
		pci_dev_put(b->pdev);
		kfree(b);
	}
	return dmabuf;
}

static long devtcp_bar_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct devtcp_bar_export req;
	struct dma_buf *dmabuf;
	int fd;

	if (cmd != DEVTCP_BAR_EXPORT)
		return -ENOTTY;
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (copy_from_user(&req, (void __user *)arg, sizeof(req)))
		return -EFAULT;
	dmabuf = devtcp_bar_export(&req);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	/* The fd is installed only once the caller has its number: none leaks. */
	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		dma_buf_put(dmabuf);
		return fd;
	}
	req.fd = fd;
	if (copy_to_user((void __user *)arg, &req, sizeof(req))) {
		put_unused_fd(fd);
		dma_buf_put(dmabuf);
		return -EFAULT;
	}
	fd_install(fd, dmabuf->file);
	return 0;
}

static const struct file_operations devtcp_bar_fops = {
	.owner		= THIS_MODULE,
	.unlocked_ioctl	= devtcp_bar_ioctl,
};

static struct miscdevice devtcp_bar_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "devtcp-bar",
	.fops	= &devtcp_bar_fops,
};

/*
 * The BAR is not requested: with IO_STRICT_DEVMEM a busy region could not
 * be mapped through sysfs, which is how tests read it.
 */
static int devtcp_bar_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	int err;

	if (!(pci_resource_flags(pdev, DEVTCP_BAR) & IORESOURCE_MEM))
		return -ENODEV;
	err = pci_enable_device_mem(pdev);
	if (err)
		return err;
	guard(mutex)(&devtcp_bar_lock);
	if (devtcp_bar_pdev) {
		pci_disable_device(pdev);
		return -EBUSY;
	}
	devtcp_bar_pdev = pdev;
	dev_info(&pdev->dev, "exporting BAR %d: %pR\n", DEVTCP_BAR, &pdev->resource[DEVTCP_BAR]);
	return 0;
}

/* Exported buffers keep the device (not its BAR) until they are released. */
static void devtcp_bar_remove(struct pci_dev *pdev)
{
	scoped_guard(mutex, &devtcp_bar_lock)
		devtcp_bar_pdev = NULL;
	pci_disable_device(pdev);
}

static const struct pci_device_id devtcp_bar_ids[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_REDHAT_QUMRANET, 0x1110) },	/* ivshmem */
	{ }
};
MODULE_DEVICE_TABLE(pci, devtcp_bar_ids);

static struct pci_driver devtcp_bar_driver = {
	.name		= "devtcp_bar",
	.id_table	= devtcp_bar_ids,
	.probe		= devtcp_bar_probe,
	.remove		= devtcp_bar_remove,
};

static int __init devtcp_bar_init(void)
{
	int err;

	if (!seg_size || !PAGE_ALIGNED(seg_size))
		return -EINVAL;
	err = pci_register_driver(&devtcp_bar_driver);
	if (err)
		return err;
	err = misc_register(&devtcp_bar_misc);
	if (err)
		pci_unregister_driver(&devtcp_bar_driver);
	return err;
}

static void __exit devtcp_bar_exit(void)
{
	misc_deregister(&devtcp_bar_misc);
	pci_unregister_driver(&devtcp_bar_driver);
}

module_init(devtcp_bar_init);
module_exit(devtcp_bar_exit);

MODULE_DESCRIPTION("devtcp selftests: ivshmem BAR exported as a page-less dma-buf");
MODULE_LICENSE("GPL");
#ifdef DEVTCP_BAR_NS_IDENT
MODULE_IMPORT_NS(DMA_BUF);	/* 6.12 stringifies the namespace */
#else
MODULE_IMPORT_NS("DMA_BUF");
#endif
