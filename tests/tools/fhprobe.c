/* fhprobe: file handles of a mounted view, taken and opened as an NFS
 * server does (name_to_handle_at, open_by_handle_at on the mount).
 *
 *   fhprobe save PATH FILE      the handle of PATH (not followed) into
 *                               FILE, as "TYPE HEX"
 *   fhprobe open MNT FILE       opens FILE's handle with the mount point
 *                               MNT; prints "ino=N type=T", and for a
 *                               regular file " data=" and its first line
 *   fhprobe write MNT FILE TEXT opens it O_WRONLY|O_APPEND, appends TEXT
 *   fhprobe forge MNT FILE HOW  opens FILE's handle changed by HOW:
 *                               gen+1, id+1, id=HEX (the 64-bit node
 *                               id), zero, short, long, type
 *   fhprobe garbage MNT N       opens N random handles of the FUSE type
 *                               and sizes; prints how many opened
 *   fhprobe offsets DIR         lists DIR (getdents64): "OFFSET NAME" a line,
 *                               OFFSET the position after the entry
 *   fhprobe from DIR OFFSET     the names listed from OFFSET on (what an
 *                               NFS READDIR resumed with that cookie gets)
 *
 * A failing open prints "open_by_handle_at: ENAME" on stderr and exits 1
 * (ESTALE: "open_by_handle_at: ESTALE"). Other failures exit 2. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

struct fh {
	struct file_handle h;
	unsigned char b[MAX_HANDLE_SZ];
};

static const char *ename(int e)
{
	switch (e) {
	case ESTALE: return "ESTALE";
	case ENOENT: return "ENOENT";
	case EINVAL: return "EINVAL";
	case EIO: return "EIO";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case EOVERFLOW: return "EOVERFLOW";
	case ENOTDIR: return "ENOTDIR";
	case ELOOP: return "ELOOP";
	case EROFS: return "EROFS";
	default: return strerror(e);
	}
}

static int save(const char *path, const char *file)
{
	struct fh f = { .h.handle_bytes = MAX_HANDLE_SZ };
	int mid;
	FILE *o;

	if (name_to_handle_at(AT_FDCWD, path, &f.h, &mid, 0) < 0) {
		fprintf(stderr, "name_to_handle_at %s: %s\n", path, ename(errno));
		return 2;
	}
	o = fopen(file, "w");
	if (!o)
		return 2;
	fprintf(o, "%d ", f.h.handle_type);
	for (unsigned i = 0; i < f.h.handle_bytes; i++)
		fprintf(o, "%02x", f.b[i]);
	fprintf(o, "\n");
	return fclose(o) ? 2 : 0;
}

static int load(const char *file, struct fh *f)
{
	char hex[2 * MAX_HANDLE_SZ + 1];
	FILE *in = fopen(file, "r");
	unsigned x;
	size_t n;

	if (!in || fscanf(in, "%d %256s", &f->h.handle_type, hex) != 2) {
		fprintf(stderr, "cannot read %s\n", file);
		return -1;
	}
	fclose(in);
	n = strlen(hex) / 2;
	for (size_t i = 0; i < n; i++) {
		if (sscanf(hex + 2 * i, "%2x", &x) != 1)
			return -1;
		f->b[i] = (unsigned char)x;
	}
	f->h.handle_bytes = (unsigned)n;
	return 0;
}

static int quiet; /* garbage: the failures are expected */

static int open_fh(const char *mnt, struct fh *f, int flags)
{
	int mfd = open(mnt, O_RDONLY | O_DIRECTORY), fd;

	if (mfd < 0) {
		perror(mnt);
		return -2;
	}
	fd = open_by_handle_at(mfd, &f->h, flags);
	if (fd < 0 && !quiet)
		fprintf(stderr, "open_by_handle_at: %s\n", ename(errno));
	close(mfd);
	return fd < 0 ? -1 : fd;
}

static const char *tname(mode_t m)
{
	return S_ISDIR(m) ? "dir" : S_ISREG(m) ? "reg" : S_ISLNK(m) ? "lnk" : "other";
}

static int show(const char *mnt, struct fh *f)
{
	int fd = open_fh(mnt, f, O_PATH), rfd;
	char buf[256] = "";
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return -fd;
	if (fstat(fd, &st) < 0)
		return 2;
	printf("ino=%llu type=%s", (unsigned long long)st.st_ino, tname(st.st_mode));
	if (S_ISREG(st.st_mode)) {
		close(fd);
		rfd = open_fh(mnt, f, O_RDONLY);
		if (rfd < 0)
			return -rfd;
		n = read(rfd, buf, sizeof(buf) - 1);
		if (n < 0) {
			fprintf(stderr, "read: %s\n", ename(errno));
			return 1;
		}
		buf[n] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		printf(" data=%s", buf);
		fd = rfd;
	}
	printf("\n");
	close(fd);
	return 0;
}

static int append(const char *mnt, struct fh *f, const char *text)
{
	int fd = open_fh(mnt, f, O_WRONLY | O_APPEND);

	if (fd < 0)
		return -fd;
	if (write(fd, text, strlen(text)) < 0) {
		fprintf(stderr, "write: %s\n", ename(errno));
		return 1;
	}
	return close(fd) ? 1 : 0;
}

/* The FUSE handle: u32 id >> 32, u32 id, u32 generation. */
static int forge(struct fh *f, const char *how)
{
	uint32_t w[3];

	memcpy(w, f->b, sizeof(w));
	if (strcmp(how, "gen+1") == 0) {
		w[2]++;
	} else if (strcmp(how, "id+1") == 0) {
		w[1]++;
	} else if (strncmp(how, "id=", 3) == 0) {
		unsigned long long id = strtoull(how + 3, NULL, 16);

		w[0] = (uint32_t)(id >> 32);
		w[1] = (uint32_t)id;
	} else if (strcmp(how, "zero") == 0) {
		memset(w, 0, sizeof(w));
	} else if (strcmp(how, "short") == 0) {
		f->h.handle_bytes = 4;
	} else if (strcmp(how, "long") == 0) {
		f->h.handle_bytes = MAX_HANDLE_SZ;
	} else if (strcmp(how, "type") == 0) {
		f->h.handle_type ^= 0x7f;
	} else {
		fprintf(stderr, "unknown forgery %s\n", how);
		return -1;
	}
	memcpy(f->b, w, sizeof(w));
	return 0;
}

static int garbage(const char *mnt, long n)
{
	struct fh f;
	long opened = 0;
	int fd;

	quiet = 1;
	srandom((unsigned)getpid());
	for (long i = 0; i < n; i++) {
		f.h.handle_type = i % 3 ? 0x81 : 0x82;
		f.h.handle_bytes = i % 3 ? 12 : 24;
		for (unsigned k = 0; k < f.h.handle_bytes; k++)
			f.b[k] = (unsigned char)random();
		if (i % 4 == 0) /* ids of a real filesystem id, a random number */
			f.b[3] = 1;
		fd = open_fh(mnt, &f, O_PATH);
		if (fd >= 0) {
			opened++;
			close(fd);
		} else if (fd == -2) {
			return 2;
		}
	}
	printf("opened=%ld\n", opened);
	return 0;
}

struct dent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* Lists dir from offset `from` with a small buffer: "OFF NAME" lines
 * (offsets), or names alone. */
static int list(const char *dir, long long from, int offsets)
{
	char buf[256];
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	long n;

	if (fd < 0 || lseek(fd, (off_t)from, SEEK_SET) < 0) {
		perror(dir);
		return 2;
	}
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long pos = 0; pos < n;) {
			struct dent64 *d = (struct dent64 *)(buf + pos);

			if (offsets)
				printf("%lld %s\n", (long long)d->d_off, d->d_name);
			else
				printf("%s\n", d->d_name);
			pos += d->d_reclen;
		}
	}
	close(fd);
	return n < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct fh f;

	if (argc == 4 && strcmp(argv[1], "save") == 0)
		return save(argv[2], argv[3]);
	if (argc == 3 && strcmp(argv[1], "offsets") == 0)
		return list(argv[2], 0, 1);
	if (argc == 4 && strcmp(argv[1], "from") == 0)
		return list(argv[2], atoll(argv[3]), 0);
	if (argc == 4 && strcmp(argv[1], "garbage") == 0)
		return garbage(argv[2], atol(argv[3]));
	if (argc < 4 || load(argv[3], &f) < 0) {
		fprintf(stderr, "usage: see the comment of tests/tools/fhprobe.c\n");
		return 2;
	}
	if (argc == 4 && strcmp(argv[1], "open") == 0)
		return show(argv[2], &f);
	if (argc == 5 && strcmp(argv[1], "write") == 0)
		return append(argv[2], &f, argv[4]);
	if (argc == 5 && strcmp(argv[1], "forge") == 0)
		return forge(&f, argv[4]) < 0 ? 2 : show(argv[2], &f);
	fprintf(stderr, "usage: see the comment of tests/tools/fhprobe.c\n");
	return 2;
}
