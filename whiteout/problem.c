/* The problem table of fsck: every kind of damage it reports, whether
 * --repair fixes it, and how. A fix is offered only where the view of
 * the union stays what it was (or the damage already made it wrong) and
 * no data a user can see is lost. */
#include <stddef.h>

#include "whiteout/fsck.h"

#define PR(c, d, fx, how) [SFS_PR_##c] = { SFS_PR_##c, #c, d, fx, how }

static const struct sfs_problem_desc table[SFS_PR_COUNT] = {
	/* header */
	PR(HEADER_MISSING, "the metadata header is missing", 1,
	   "write a new header (version 1, a new branch UUID)"),
	PR(HEADER_NOT_FILE, "the metadata header is not a regular file", 0,
	   "none: move it away by hand, then run fsck --repair"),
	PR(HEADER_SHORT, "the metadata header is truncated", 1,
	   "rewrite the header, keeping the fields that can be read (a new UUID if it is lost)"),
	PR(HEADER_LONG, "the metadata header is longer than 64 bytes", 1,
	   "rewrite the header as its first 64 bytes"),
	PR(HEADER_MAGIC, "the metadata header has a bad magic number", 1,
	   "write a new header (version 1, a new branch UUID)"),
	PR(HEADER_CRC, "the metadata header's checksum does not match", 1,
	   "undo the one damaged byte the checksum finds; else rewrite the header with its fields and a new checksum (not when its version field is not 1)"),
	PR(HEADER_VERSION, "the metadata header says format version 0", 0,
	   "none: a header of version 0 was never written by stackfs"),
	PR(HEADER_FLAGS, "the metadata header has unknown flags", 1,
	   "clear the unknown flags"),
	PR(HEADER_RESERVED, "the metadata header's reserved bytes are not zero", 1,
	   "zero them"),
	/* the directory */
	PR(META_NOT_DIR, ".stackfs is not a directory", 0,
	   "none: move it away by hand (the next mount makes a new one)"),
	PR(META_MODE, "the metadata directory's mode is not 0700", 1,
	   "set mode 0700"),
	PR(META_UNTRUSTED, "the metadata directory or an entry in it is not the daemon's user's "
	   "alone (another owner, writable by group or others, a symlink, another "
	   "filesystem): whoever can change it could have the daemon give their files "
	   "another owner and set-ID bits; a mount refuses it", 1,
	   "rebuild it owned by the daemon's user, keeping the records that check out "
	   "(header, registry, inode map, index entries with an origin record); the old "
	   "directory is kept beside as .stackfs.untrusted.TIME, its commit journal (if "
	   "any) not acted on"),
	PR(META_TMP, "a temporary file of an interrupted update is left", 1,
	   "remove it (the update it belonged to did not happen)"),
	PR(META_UNKNOWN, "an unknown entry is in the metadata directory", 0,
	   "none: not made by this version of stackfs; remove it by hand if it is not needed"),
	PR(META_TOO_LARGE, "a metadata file is larger than its limit (corrupt: a mount refuses it)", 0,
	   "none: it may hold ids or inode numbers in use; move it away by hand (a mount makes a new one)"),
	/* registry */
	PR(REG_MISSING, "the registry is missing", 1,
	   "write an empty registry (ids are given again at the next mount)"),
	PR(REG_NOT_FILE, "the registry is not a regular file", 0,
	   "none: move it away by hand, then run fsck --repair"),
	PR(REG_NEWER, "the registry has a newer version", 0,
	   "none: use a newer stackfs"),
	PR(REG_HEAD, "the registry's file header is corrupt", 1,
	   "rewrite the registry with a new file header; the next ids follow the highest ids found"),
	PR(REG_PARTIAL, "the registry ends with a partial record", 1,
	   "rewrite the registry without it"),
	PR(REG_CRC, "a registry record's checksum does not match", 1,
	   "rewrite the registry without it (its id is not given again)"),
	PR(REG_FIELD, "a registry record has a field out of range", 1,
	   "rewrite the registry without it (its id is not given again)"),
	PR(REG_DUP, "a registry record repeats the id or the filesystem/branch of an earlier one", 1,
	   "rewrite the registry without it (the earlier record is the one in use)"),
	/* inomap */
	PR(INO_MISSING, "the inode map is missing", 1,
	   "write an empty inode map"),
	PR(INO_NOT_FILE, "the inode map is not a regular file", 0,
	   "none: move it away by hand, then run fsck --repair"),
	PR(INO_NEWER, "the inode map has a newer version", 0,
	   "none: use a newer stackfs"),
	PR(INO_HEAD, "the inode map's file header is corrupt", 1,
	   "rewrite the file header (records keep their places and numbers)"),
	PR(INO_PARTIAL, "the inode map ends with a partial record (an interrupted append)", 1,
	   "cut it off (its number was never handed out)"),
	PR(INO_CRC, "an inode map record's checksum does not match", 1,
	   "retire the record in place: its number is never given again"),
	PR(INO_FIELD, "an inode map record has a field out of range", 1,
	   "retire the record in place: its number is never given again"),
	PR(INO_DUP, "an inode map record repeats the inode of an earlier one", 1,
	   "retire it (the earlier record is the one in use)"),
	/* other files */
	PR(LOWERS_BAD, "the list of branches of the last mount (lowers) cannot be read", 1,
	   "remove it (the next mount writes it again)"),
	PR(WORKDIR_CORRUPT, "the root's record of the workdir holding its metadata is damaged "
	   "(no absolute path)", 1,
	   "with --workdir DIR (where the metadata is): write DIR as the record; without it "
	   "nothing else can be checked"),
	PR(XNAMES_BAD, "the names kept for NFS file handles (exportnames) cannot be read", 1,
	   "remove it (handles of files the kernel no longer caches answer ESTALE)"),
	PR(LOCK_BAD, "the lock file is not a regular file", 0,
	   "none: move it away by hand"),
	PR(WORK_NOT_DIR, "the staging directory work/ is not a directory", 0,
	   "none: move it away by hand"),
	PR(WORK_LEFTOVER, "an interrupted copy-up or whiteout left a staged entry", 1,
	   "remove it (it was never visible in the union)"),
	PR(INDEX_NOT_DIR, "the hard-link index index/ is not a directory", 0,
	   "none: move it away by hand"),
	PR(INDEX_NAME, "an index entry is not a hard link named FSID-INODE", 0,
	   "none: not made by stackfs; remove it by hand"),
	PR(INDEX_ORPHAN, "an index entry has no other link", 1,
	   "remove it (no name in the branch uses it)"),
	PR(INDEX_STALE, "an index entry is the copy of a lower inode that no longer exists (its number may be reused)", 1,
	   "remove the index name (a name the copy was placed under keeps its data; no lower name shows it)"),
	/* the tree */
	PR(ORIGIN_CORRUPT, "an origin record is damaged (its checksum or its fields)", 1,
	   "put back the one byte the checksum finds; else remove the record (the entry "
	   "keeps its data; its inode number may change), but not an index entry's"),
	PR(ORIGIN_DANGLING, "an origin record points to a lower inode that no longer exists", 1,
	   "remove the record (its inode number could be reused by a new lower file)"),
	PR(LOWERNAME_CORRUPT, "a lower-name record is damaged (its checksum or its path)", 1,
	   "remove the record (a hint: the entry keeps its data and inode number; a "
	   "renamed copy of a hard-linked file on a FUSE lower shows its own link count)"),
	PR(WH_NOTHING, "a whiteout hides nothing in the lower branches", 1,
	   "remove it (the view does not change)"),
	PR(WH_BESIDE, "a whiteout is beside the entry it would hide (an interrupted removal, "
	   "or an OCI layer's deletion of what lies below)", 1,
	   "remove the whiteout (the entry is what the union shows; a directory is "
	   "made opaque first, as a whiteout beside it says)"),
	PR(WH_EMPTY_DIR, "a .wh. name is an empty directory, not an empty file", 1,
	   "replace it with an empty file (it hides the same name)"),
	PR(WH_BAD_TYPE, "a .wh. name is not an empty regular file", 0,
	   "none: it holds data; the union treats it as a whiteout, so check it by hand"),
	PR(WH_RESERVED, "a .wh..wh. name other than .wh..wh..opq (an aufs internal name)", 0,
	   "none: not made by stackfs; remove it by hand"),
	PR(OPQ_VALUE, "an opaque xattr has a value other than \"y\"", 1,
	   "remove the xattr (the union does not treat the directory as opaque either way)"),
	PR(OPQ_NOT_DIR, "an opaque xattr is on a non-directory", 1,
	   "remove the xattr (it means nothing there)"),
	PR(OPQ_MARKER_TYPE, "an opaque marker .wh..wh..opq is not a regular file", 1,
	   "replace it with an empty file (the directory stays opaque)"),
	PR(OPQ_MARKER_DATA, "an opaque marker .wh..wh..opq is not empty", 0,
	   "none: it holds data; the directory is treated as opaque, so check it by hand"),
	PR(REDIRECT_BAD, "a redirect record is not a valid path (or is on a non-directory)", 1,
	   "remove it; a directory is made opaque first (it shows its own entries only: "
	   "where its lower ones were cannot be read from the record); a metacopy's is left"),
	PR(DEVICE_BAD, "the marker of a real 0:0 character device is damaged", 1,
	   "write it again (only a device made as one carries it; a whiteout never does)"),
	PR(METACOPY_NO_DATA, "a metacopy file's data is not below any more (reads of it fail "
	   "with EIO)", 0,
	   "none: put the lower file back (or the branches in their order), or remove the "
	   "file through the view (its data is lost)"),
	PR(METACOPY_TIMES_KEPT, "a metacopy file's data was being brought in when that was "
	   "killed: the times it must keep are set aside, and its own may be the kill's", 1,
	   "put the kept times back on the file and drop the record (its data comes in at "
	   "its next write or commit)"),
	PR(METACOPY_TIMES_BAD, "a metacopy file's kept times are not a valid record", 1,
	   "remove the record (the file keeps the times it shows)"),
	PR(NESTED_META, "a stackfs metadata directory is below the branch root (a nested branch?)", 0,
	   "none: it is visible in the union; remove it by hand if it is not a branch"),
	/* stackfs commit */
	PR(COMMIT_CORRUPT, "an unfinished commit's journal or marker is damaged", 1,
	   "put back the one byte the checksum finds, then recover the commit; else none: "
	   "the commit cannot be recovered without it"),
	PR(COMMIT_UNFINISHED, "a stackfs commit from or into this branch was interrupted (its journal is left)", 1,
	   "finish it from the journal: before the lower branch is complete, put every moved lower directory back (the union shows what it showed before); after, empty the rw branch; then remove the journal and the marker"),
	PR(COMMIT_MARKER_STALE, "a marker of a commit into this branch names a rw branch that has no journal for it", 1,
	   "remove the marker (that commit stopped before it changed anything, or was finished)"),
	PR(COMMIT_STAGED, "a staging directory of an interrupted commit without a journal holds lower directories", 0,
	   "none: they hold data the rw branch's redirects look for; move them back to the paths the redirects name"),
	PR(COMMIT_TMP, "a temporary copy of an interrupted commit is left", 1,
	   "remove it (it never was in the union: .wh..wh. names are hidden)"),
	/* sync mode */
	PR(VOLATILE_UNCLEAN, "the branch was mounted with -o sync=volatile and that mount did "
	   "not end cleanly (the header's volatile flag): after a power cut or a crash what it "
	   "wrote may be lost or partial, a deleted file back; a mount refuses it", 0,
	   "none: nothing tells what was lost; throw the branch away, or keep it as it is by "
	   "mounting it once with -o accept_unclean (which clears the flag)"),
	/* who wrote the records */
	PR(RECORDS_USER, "the branch's records are user.* attributes (the header's flag: "
	   "written by a mount without CAP_SYS_ADMIN) and this fsck runs with it: it does not "
	   "judge records anyone who may write the branch can forge, and a mount as root "
	   "refuses the branch; nothing else of the tree is checked", 0,
	   "none: run fsck as the user who mounts the branch"),
};

const struct sfs_problem_desc *sfs_problem_desc(enum sfs_problem_code code)
{
	static const struct sfs_problem_desc unknown = {
		SFS_PR_COUNT, "UNKNOWN", "unknown problem", 0, "none"
	};

	if ((unsigned)code >= SFS_PR_COUNT || !table[code].name)
		return &unknown;
	return &table[code];
}
