/* The namespace of the union's own records (records.h). */
#include <linux/capability.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "xattr/records.h"

/* The inode number of the initial user namespace's /proc/self/ns/user
 * (the kernel's PROC_USER_INIT_INO, fixed since Linux 3.8). */
#define INIT_USER_NS_INO 0xEFFFFFFDu

static bool user_ns;

static bool in_init_user_ns(void)
{
	struct stat st;

	return stat("/proc/self/ns/user", &st) == 0 && st.st_ino == INIT_USER_NS_INO;
}

static bool has_sys_admin(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = { 0 };

	if (syscall(SYS_capget, &h, d) < 0)
		return false;
	return d[CAP_SYS_ADMIN / 32].effective & (1u << (CAP_SYS_ADMIN % 32));
}

bool sfs_records_privileged(void)
{
	/* capabilities in a user namespace count for it alone: its root
	 * may not set trusted.* attributes on the host's filesystems */
	return has_sys_admin() && in_init_user_ns();
}

bool sfs_records_init(void)
{
	user_ns = !sfs_records_privileged();
	return user_ns;
}

bool sfs_records_user(void)
{
	return user_ns;
}

const char *sfs_rec_name(enum sfs_rec r)
{
	static const char *const names[][2] = {
		[SFS_REC_ORIGIN] = { "trusted.stackfs.origin", "user.stackfs.origin" },
		[SFS_REC_REDIRECT] = { "trusted.stackfs.redirect", "user.stackfs.redirect" },
		[SFS_REC_DEVICE] = { "trusted.stackfs.device", "user.stackfs.device" },
		[SFS_REC_WORKDIR] = { "trusted.stackfs.workdir", "user.stackfs.workdir" },
		[SFS_REC_OVL_OPAQUE] = { "trusted.overlay.opaque", "user.overlay.opaque" },
		[SFS_REC_OVL_REDIRECT] = { "trusted.overlay.redirect", "user.overlay.redirect" },
		[SFS_REC_LOWERNAME] = { "trusted.stackfs.lowername", "user.stackfs.lowername" },
	};

	return names[r][user_ns];
}
