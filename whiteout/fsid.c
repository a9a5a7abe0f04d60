/* The identity of a filesystem (its UUID) and of an entry in it (its
 * file handle), as the registry and origin records keep them (docs/format.md
 * "registry": Filesystem UUID). */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/bio.h"
#include "common/runtime.h"
#include "whiteout/metadir.h"
#include "whiteout/ondisk.h"

#define FUSE_MAGIC 0x65735546

/* linux/fs.h has it from 6.5; older headers do not. */
#ifndef FS_IOC_GETFSUUID
struct fsuuid2 {
	uint8_t len;
	uint8_t uuid[16];
};
#define FS_IOC_GETFSUUID _IOR(0x15, 0, struct fsuuid2)
#endif

static int reopen_rdonly(int fd)
{
	char p[32];
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0)
		return -errno;
	if (!(flags & O_PATH)) {
		fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		return fd < 0 ? -errno : fd;
	}
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	fd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	return fd < 0 ? -errno : fd;
}

/* An RFC 9562 version 8 ("custom") UUID from a hash of key. */
static void custom_uuid(const void *key, size_t len, uint8_t uuid[16])
{
	for (int i = 0; i < 4; i++) {
		uint32_t c = htole32(sfs_crc32c((uint32_t)i * 0x9E3779B9u, key, len));

		memcpy(uuid + 4 * i, &c, 4);
	}
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x80);
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
}

/* What names the filesystem a ceph-fuse mount shows: its mountinfo
 * source is "ceph-fuse" for every cluster, so the cluster's fsid, which
 * the client answers as a virtual xattr of any inode. */
static int ceph_source(int rfd, char *src, size_t len)
{
	ssize_t n = fgetxattr(rfd, "ceph.cluster_fsid", src, len - 1);

	if (n <= 0)
		return n < 0 ? -errno : -ENODATA;
	src[n] = '\0';
	return 0;
}

/* The FUSE client of a filesystem other hosts share has no f_fsid, and
 * its st_dev is a number given at each mount of the client: after a
 * reboot the same volume would be another filesystem, and every inode
 * number of a view over it would change. Its identity is what it mounts
 * instead: type and source ("fuse.glusterfs", "host:/volume"; for
 * ceph-fuse the cluster's fsid), which every client mount of the volume
 * shares. Other FUSE filesystems keep st_dev: two mounts of one (say
 * "stackfs") source may be different trees. 0, or -ENOENT when it is not
 * such a filesystem (or a ceph-fuse mount that does not say its
 * cluster: never taken for another cluster's). */
static int shared_fuse_uuid(int rfd, dev_t dev, uint8_t uuid[16])
{
	char type[64], src[PATH_MAX], key[sizeof(type) + sizeof(src) + 16];

	if (sfs_runtime_source_of(major(dev), minor(dev), type, sizeof(type), src,
				  sizeof(src)) < 0 || !sfs_fstype_shared(type) || !src[0])
		return -ENOENT;
	if (!strcmp(type, "fuse.ceph-fuse") && ceph_source(rfd, src, sizeof(src)) < 0)
		return -ENOENT;
	snprintf(key, sizeof(key), "stackfs\n%s\n%s", type, src);
	custom_uuid(key, strlen(key), uuid);
	return 0;
}

int sfs_fs_uuid(int fd, uint8_t uuid[16])
{
	struct fsuuid2 u = { 0 };
	struct statfs sf;
	struct stat st;
	uint8_t key[24];
	int rfd, ret = 0;

	rfd = reopen_rdonly(fd);
	if (rfd < 0)
		return rfd;
	if (ioctl(rfd, FS_IOC_GETFSUUID, &u) == 0) {
		if (u.len == 16 && !sfs_all_zero(u.uuid, 16)) {
			memcpy(uuid, u.uuid, 16);
			goto out;
		}
	} else if (errno != ENOTTY && errno != EOPNOTSUPP && errno != EINVAL &&
		   errno != ENOSYS) {
		/* only "not supported" falls back */
		ret = -errno;
		goto out;
	}
	/* no UUID from the filesystem: a name derived from statfs's f_fsid
	 * (or st_dev when that is zero) and the filesystem type, marked as
	 * an RFC 9562 version 8 ("custom") UUID */
	if (fstatfs(rfd, &sf) < 0 || fstat(rfd, &st) < 0) {
		ret = -errno;
		goto out;
	}
	if (sf.f_type == FUSE_MAGIC && shared_fuse_uuid(rfd, st.st_dev, uuid) == 0)
		goto out;
	memset(key, 0, sizeof(key));
	memcpy(key, &sf.f_fsid, sizeof(sf.f_fsid) < 8 ? sizeof(sf.f_fsid) : 8);
	if (sfs_all_zero(key, 8)) {
		uint64_t dev = htole64((uint64_t)st.st_dev);

		memcpy(key, &dev, 8);
	}
	{
		uint64_t type = htole64((uint64_t)sf.f_type);

		memcpy(key + 8, &type, 8);
		memcpy(key + 16, "stackfs", 8);
	}
	custom_uuid(key, sizeof(key), uuid);
out:
	close(rfd);
	return ret;
}

/* Whether the filesystem of fd (stat st) is a FUSE one: 1, 0 or -errno.
 * A symlink is not asked its statfs: the server may follow it, and
 * GlusterFS's answers ESTALE for one whose target it cannot find from
 * the brick (every relative one), so no copy-up of a lower symlink
 * worked there. Its filesystem is the mount its st_dev names instead
 * (docs/distributed.md "What a branch's filesystem lacks"). */
static int is_fuse(int fd, const struct stat *st)
{
	char type[64];
	struct statfs sf;
	int ret;

	if (S_ISLNK(st->st_mode)) {
		ret = sfs_runtime_fstype_of(major(st->st_dev), minor(st->st_dev), type, sizeof(type));
		if (ret < 0)
			return ret;
		return !strcmp(type, "fuse") || !strcmp(type, "fuseblk") || !strncmp(type, "fuse.", 5);
	}
	ret = sfs_do_fstatfs(fd, &sf);
	return ret < 0 ? ret : sf.f_type == FUSE_MAGIC;
}

/* FUSE's own handles (types 0x81 and 0x82) name a node of the client's
 * connection, its node id and a generation most servers leave 0, not
 * the inode: once the client forgets the node such a handle opens
 * nothing (ESTALE) or, after the server gave the id to another file,
 * that other file (GlusterFS: 19 of 20 handles; docs/distributed.md
 * "File handles"). On FUSE the identity kept is the inode number, in a
 * handle of our own type that is never opened. XFS's 64-bit handles
 * have type 0x81 too: only an anonymous device (major 0) is asked its
 * filesystem type, which on FUSE is a round trip. */
static int number_if_fuse(int fd, struct file_handle *fh)
{
	struct stat st;
	uint64_t ino;
	int ret;

	if (fh->handle_type != 0x81 && fh->handle_type != 0x82)
		return 0;
	ret = sfs_do_fstat(fd, &st);
	if (ret < 0 || major(st.st_dev) != 0)
		return ret < 0 ? ret : 0;
	ret = is_fuse(fd, &st);
	if (ret <= 0)
		return ret;
	ino = htole64((uint64_t)st.st_ino);
	fh->handle_type = SFS_HANDLE_NUMBER;
	fh->handle_bytes = sizeof(ino);
	memcpy(fh->f_handle, &ino, sizeof(ino));
	return 0;
}

int sfs_fs_handle(int dirfd, const char *name, int *handle_type,
		  void *handle, unsigned *handle_bytes)
{
	union {
		struct file_handle fh;
		uint8_t raw[sizeof(struct file_handle) + SFS_HANDLE_MAX];
	} u;
	int mount_id, fd = name[0] ? sfs_do_open(dirfd, name, O_PATH, 0) : dirfd, ret = 0;

	/* a name is opened first: name_to_handle_at would cross a mount */
	if (fd < 0)
		return fd;
	u.fh.handle_bytes = SFS_HANDLE_MAX;
	if (sfs_do_name_to_handle(fd, "", &u.fh, &mount_id, AT_EMPTY_PATH) < 0)
		ret = errno == EOVERFLOW ? -EOVERFLOW : -errno;
	else
		ret = number_if_fuse(fd, &u.fh);
	if (fd != dirfd)
		close(fd);
	if (ret < 0)
		return ret;
	if (u.fh.handle_bytes > *handle_bytes)
		return -EOVERFLOW;
	memcpy(handle, u.fh.f_handle, u.fh.handle_bytes);
	*handle_bytes = u.fh.handle_bytes;
	*handle_type = u.fh.handle_type;
	return 0;
}
