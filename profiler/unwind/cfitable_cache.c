/* cfitable_cache.c: unwind rows kept on disk between recordings (cfitable.h), so that a file's
 * rows are built with libdw once, not at every `record --mode bpf`. One file per ELF file under
 * $XDG_CACHE_HOME/csampler/cfi-v1 (else ~/.cache/...), named by the ELF file's device, inode,
 * size and modification time (a rebuilt or replaced file gets a new name). Each entry starts
 * with a header repeating that key, the format version and counts, and ends with a checksum of
 * everything before it: an entry that is short, from another version or damaged is ignored and
 * built again. Entries are written to a temporary file and renamed into place, so a reader
 * never sees half of one. Nothing here is required: any failure means building the rows. */
#include "unwind/cfitable.h"

#include "base/cs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CFITABLE_CACHE_MAGIC 0x3176696663736331ull /* "1cscfiv1" */
#define CFITABLE_CACHE_VERSION 1u
#define CFITABLE_CACHE_MAX_ROWS (64u << 20)

struct cfitable_cache_head {
	uint64_t magic;
	uint32_t version, row_size, seg_size, pad;
	uint64_t dev, ino, size, mtime_ns;
	uint64_t nrows, nsegs, unsupported;
};

/* The cache folder (created, mode 0700), or -errno; CSAMPLER_CFI_CACHE=0 turns the cache off. */
static int cfitable_cache_dir(char *buf, size_t len)
{
	return cs_cache_dir("cfi-v1", "CSAMPLER_CFI_CACHE", buf, len);
}

static int cfitable_cache_path(const struct stat *st, char *buf, size_t len)
{
	char dir[3900];
	int ret = cfitable_cache_dir(dir, sizeof(dir));
	if (ret)
		return ret;
	snprintf(buf, len, "%s/%llx-%llx-%llx-%llx.rows", dir, (unsigned long long)st->st_dev,
		 (unsigned long long)st->st_ino, (unsigned long long)st->st_size,
		 (unsigned long long)st->st_mtim.tv_sec * 1000000000ull + (unsigned long long)st->st_mtim.tv_nsec);
	return 0;
}

static struct cfitable_cache_head cfitable_cache_key(const struct stat *st)
{
	return (struct cfitable_cache_head){
		.magic = CFITABLE_CACHE_MAGIC, .version = CFITABLE_CACHE_VERSION,
		.row_size = sizeof(struct cfitable_row), .seg_size = sizeof(struct cfitable_segment),
		.dev = st->st_dev, .ino = st->st_ino, .size = (uint64_t)st->st_size,
		.mtime_ns = (uint64_t)st->st_mtim.tv_sec * 1000000000ull + (uint64_t)st->st_mtim.tv_nsec,
	};
}

/* The entry at path, checked against key; 0 or -errno (-EBADMSG: damaged, stale). The entry
 * is mapped, not read: t's rows point into the mapping (cfitable_free unmaps it), which spares
 * two copies of a large file's rows (libtorch_cpu.so: 34 MB) and their page faults. */
static int cfitable_cache_read(const char *path, const struct cfitable_cache_head *key, struct cfitable *t)
{
	struct cfitable_cache_head h;
	struct stat st;
	uint64_t sum;
	int ret = -EBADMSG;
	char *buf = MAP_FAILED;
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(h) + sizeof(sum))
		goto out;
	len = (size_t)st.st_size;
	buf = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	if (buf == MAP_FAILED)
		goto out;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != key->magic || h.version != key->version || h.row_size != key->row_size ||
	    h.seg_size != key->seg_size || h.dev != key->dev || h.ino != key->ino ||
	    h.size != key->size || h.mtime_ns != key->mtime_ns || !h.nrows ||
	    h.nrows > CFITABLE_CACHE_MAX_ROWS || h.nsegs > 64)
		goto out;
	size_t body = (size_t)(h.nsegs * sizeof(struct cfitable_segment) + h.nrows * sizeof(struct cfitable_row));
	if (len != sizeof(h) + body + sizeof(sum))
		goto out;
	memcpy(&sum, buf + sizeof(h) + body, sizeof(sum));
	if (sum != cs_hash_bytes(buf, sizeof(h) + body, CFITABLE_CACHE_MAGIC))
		goto out;
	memset(t, 0, sizeof(*t));
	t->nsegs = h.nsegs;
	t->nrows = h.nrows;
	t->unsupported = h.unsupported;
	t->segs = cs_calloc(h.nsegs ? h.nsegs : 1, sizeof(*t->segs));
	memcpy(t->segs, buf + sizeof(h), h.nsegs * sizeof(*t->segs));
	/* the header and segments are multiples of 8 bytes: the rows are aligned */
	t->rows = (struct cfitable_row *)(void *)(buf + sizeof(h) + h.nsegs * sizeof(*t->segs));
	t->mapped = buf;
	t->mapped_len = len;
	buf = MAP_FAILED;
	ret = 0;
out:
	if (buf != MAP_FAILED)
		munmap(buf, len);
	close(fd);
	return ret;
}

/* Write t as the entry at path: a temporary file beside it, renamed over it when whole. */
static void cfitable_cache_write(const char *path, struct cfitable_cache_head h, const struct cfitable *t)
{
	char tmp[4300];
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return;
	h.nrows = t->nrows;
	h.nsegs = t->nsegs;
	h.unsupported = t->unsupported;
	struct cs_buf b = { 0 };
	cs_buf_put(&b, &h, sizeof(h));
	cs_buf_put(&b, t->segs, t->nsegs * sizeof(*t->segs));
	cs_buf_put(&b, t->rows, t->nrows * sizeof(*t->rows));
	uint64_t sum = cs_hash_bytes(b.data, b.len, CFITABLE_CACHE_MAGIC);
	cs_buf_put(&b, &sum, sizeof(sum));
	bool ok = write(fd, b.data, b.len) == (ssize_t)b.len;
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp, path) < 0)
		unlink(tmp);
	cs_buf_free(&b);
}

bool cfitable_cached(int fd)
{
	struct stat st;
	char path[4200];
	return fstat(fd, &st) == 0 && cfitable_cache_path(&st, path, sizeof(path)) == 0 &&
	       access(path, R_OK) == 0;
}

int cfitable_build_cached(int fd, struct cfitable *t, bool *from_cache)
{
	struct stat st;
	char path[4200];
	*from_cache = false;
	if (fstat(fd, &st) < 0 || cfitable_cache_path(&st, path, sizeof(path)))
		return cfitable_build(fd, t);
	struct cfitable_cache_head key = cfitable_cache_key(&st);
	if (cfitable_cache_read(path, &key, t) == 0)
		return *from_cache = true, 0;
	int ret = cfitable_build(fd, t);
	if (ret == 0 && t->nrows <= CFITABLE_CACHE_MAX_ROWS && t->nsegs <= 64)
		cfitable_cache_write(path, key, t);
	return ret;
}
