/* datafile.c: writer and record-level reader of csampler's chunked data file (datafile.h,
 * man/csampler-data.5). Chunks are compressed with zstd and checked with zlib's crc32. */
#include "format/datafile.h"

#include "base/cs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#define DF_CHUNK_FLUSH_AT (256u << 10)

struct df_writer {
	int fd;
	char *path;
	struct cs_buf chunk;    /* records not yet written */
	uint32_t nrecords;
	bool compress;
	ZSTD_CCtx *zctx;
	void *zbuf;
	size_t zcap;
	uint64_t bytes;         /* bytes written to the file */
	int err;                /* first write error (-errno), sticky */
};

static void put_le32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4); /* x86-64 and arm64 are little endian; the format says so */
}

static int df_write_all(struct df_writer *w, const void *data, size_t len)
{
	const uint8_t *p = data;
	while (len) {
		ssize_t n = write(w->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : ENOSPC;
			const char *hint = e == ENOSPC || e == EDQUOT
						   ? "; free some space or record with -o on another filesystem"
					   : e == EFBIG ? "; the file size limit was reached: raise it (ulimit -f) or record a shorter run"
							: "";
			if (!w->err)
				w->err = cs_error(e, "write %s: %s%s", w->path, strerror(e), hint);
			return w->err;
		}
		p += n;
		len -= (size_t)n;
		w->bytes += (uint64_t)n;
	}
	return 0;
}

/* What an existing output path is, when it is not something df_writer_open may replace. */
static const char *df_not_regular(mode_t mode)
{
	if (S_ISLNK(mode))
		return "a symbolic link (not followed)";
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device";
	return S_ISREG(mode) ? NULL : "not a regular file";
}

/* The output path is never opened: the new file is created under a fresh temporary name in the
 * same directory (O_EXCL, so nothing planted there is followed), its header is written, and only
 * then does it take the path's name by rename(), after the previous file was renamed to .old.
 * rename() replaces directory entries and never follows a symbolic link, so a link planted at
 * the path or at .old cannot redirect a write, and a failure at any step leaves the previous
 * file under its name (or, after the first rename, under .old). */
int df_writer_open_version(struct df_writer **out, const char *path, bool compress,
			   uint32_t version)
{
	struct df_writer *w = NULL;
	uint8_t hdr[DF_HEADER_SIZE] = { 0 };
	struct stat st;
	char *tmp = NULL, *old = NULL;
	bool rotate = false;
	const char *what;
	int fd, ret;

	if (lstat(path, &st) == 0) {
		if ((what = df_not_regular(st.st_mode)))
			return cs_error(EEXIST, "%s is %s: give a new or regular file with -o", path, what);
		if (st.st_uid != geteuid())
			return cs_error(EPERM, "%s belongs to user %u: not replacing another user's file; remove it or choose another output with -o",
					path, (unsigned)st.st_uid);
		rotate = st.st_size > 0;
	}
	tmp = cs_asprintf("%s.XXXXXX", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		ret = cs_error(errno, "cannot create %s: %s; choose a writable path with -o", path,
			       strerror(errno));
		free(tmp);
		return ret;
	}
	/* 0600 whatever the umask: the file may hold copies of the target's stack memory. */
	if (fchmod(fd, 0600) < 0) {
		ret = cs_error(errno, "fchmod %s: %s; choose another output with -o", tmp, strerror(errno));
		goto fail;
	}
	w = cs_calloc(1, sizeof(*w));
	w->fd = fd;
	w->path = cs_strdup(path);
	w->compress = compress;
	memcpy(hdr, DF_MAGIC, 8);
	put_le32(hdr + 8, version);
	put_le32(hdr + 12, DF_MIN_READER_VERSION);
	/* hdr[16..24): feature bits, none defined yet */
	put_le32(hdr + 24, DF_HEADER_SIZE);
	ret = df_write_all(w, hdr, sizeof(hdr));
	if (ret)
		goto fail;
	if (rotate) {
		old = cs_asprintf("%s.old", path);
		if (rename(path, old) < 0) {
			ret = cs_error(errno, "rename %s to %s: %s; remove %s or choose another output with -o",
				       path, old, strerror(errno), old);
			goto fail;
		}
	}
	if (rename(tmp, path) < 0) {
		ret = cs_error(errno, "rename %s to %s: %s; choose another output with -o", tmp, path,
			       strerror(errno));
		if (old && rename(old, path) < 0)
			cs_warn("the previous %s is now %s", path, old);
		goto fail;
	}
	free(tmp);
	free(old);
	if (compress) {
		w->zctx = ZSTD_createCCtx();
		if (!w->zctx) {
			cs_warn("ZSTD_createCCtx failed: writing %s uncompressed", path);
			w->compress = false;
		} else {
			ZSTD_CCtx_setParameter(w->zctx, ZSTD_c_compressionLevel, 1);
		}
	}
	*out = w;
	return 0;

fail:
	unlink(tmp);
	if (w) {
		free(w->path);
		free(w);
	}
	close(fd);
	free(tmp);
	free(old);
	return ret;
}

int df_flush(struct df_writer *w)
{
	uint8_t ch[DF_CHUNK_HEADER_SIZE];
	const void *stored = w->chunk.data;
	size_t stored_len = w->chunk.len;
	uint32_t flags = 0;

	if (w->err)
		return w->err;
	if (!w->nrecords)
		return 0;
	if (w->compress) {
		size_t bound = ZSTD_compressBound(w->chunk.len);
		cs_grow(&w->zbuf, &w->zcap, bound, 1);
		size_t n = ZSTD_compress2(w->zctx, w->zbuf, w->zcap, w->chunk.data, w->chunk.len);
		if (!ZSTD_isError(n) && n < w->chunk.len) {
			stored = w->zbuf;
			stored_len = n;
			flags = DF_CHUNK_ZSTD;
		}
	}
	put_le32(ch, DF_CHUNK_MAGIC);
	put_le32(ch + 4, flags);
	put_le32(ch + 8, (uint32_t)stored_len);
	put_le32(ch + 12, (uint32_t)w->chunk.len);
	put_le32(ch + 16, (uint32_t)crc32(0, stored, (uInt)stored_len));
	put_le32(ch + 20, w->nrecords);
	/* One write per chunk where possible, so a kill leaves whole chunks. */
	struct cs_buf all = { 0 };
	cs_buf_put(&all, ch, sizeof(ch));
	cs_buf_put(&all, stored, stored_len);
	int ret = df_write_all(w, all.data, all.len);
	cs_buf_free(&all);
	w->chunk.len = 0;
	w->nrecords = 0;
	return ret;
}

void df_put2(struct df_writer *w, uint16_t type, const void *a, size_t alen, const void *b,
	     size_t blen)
{
	uint8_t rh[8];
	uint32_t size = (uint32_t)(8 + alen + blen);

	if (w->err)
		return;
	memcpy(rh, &type, 2);
	memset(rh + 2, 0, 2);
	put_le32(rh + 4, size);
	cs_buf_put(&w->chunk, rh, 8);
	if (alen)
		cs_buf_put(&w->chunk, a, alen);
	if (blen)
		cs_buf_put(&w->chunk, b, blen);
	w->nrecords++;
	if (w->chunk.len >= DF_CHUNK_FLUSH_AT)
		df_flush(w);
}

void df_put(struct df_writer *w, uint16_t type, const void *payload, size_t len)
{
	df_put2(w, type, payload, len, NULL, 0);
}

int df_writer_error(const struct df_writer *w)
{
	return w->err;
}

uint64_t df_bytes_written(const struct df_writer *w)
{
	return w->bytes;
}

int df_writer_close(struct df_writer *w)
{
	int ret;
	if (!w)
		return 0;
	df_flush(w);
	if (!w->err && fsync(w->fd) < 0 && errno != EINVAL && errno != EROFS)
		w->err = cs_error(errno, "fsync %s: %s", w->path, strerror(errno));
	if (close(w->fd) < 0 && !w->err)
		w->err = cs_error(errno, "close %s: %s", w->path, strerror(errno));
	ret = w->err;
	ZSTD_freeCCtx(w->zctx);
	free(w->zbuf);
	cs_buf_free(&w->chunk);
	free(w->path);
	free(w);
	return ret;
}

/* ---- reader ---- */

/* Where the reader takes its bytes from: a file descriptor, or a file already in memory
 * (df_read_mem, for tests and the fuzz harness). */
struct df_in {
	int fd;                 /* -1: read from mem */
	const uint8_t *mem;
	size_t len, pos;        /* pos: where the next read starts, in mem or in the file */
	uint32_t *version;      /* where the header's version goes, or NULL */
};

static int df_read_full(struct df_in *in, void *buf, size_t len, size_t *got)
{
	uint8_t *p = buf;
	*got = 0;
	if (in->fd < 0) {
		size_t n = in->len - in->pos < len ? in->len - in->pos : len;
		memcpy(p, in->mem + in->pos, n);
		in->pos += n;
		*got = n;
		return 0;
	}
	while (*got < len) {
		ssize_t n = read(in->fd, p + *got, len - *got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		*got += (size_t)n;
	}
	in->pos += *got;
	return 0;
}

/* The fuzz build (tests/fuzz/build.mk) takes every chunk's CRC as good, as is the custom of
 * libFuzzer builds: otherwise nearly every mutation of a record would stop at the CRC and the
 * record parsers behind it would go untested. The unit tests check the CRC itself. */
static bool df_crc_ok(const uint8_t *stored, uint32_t len, uint32_t crc)
{
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
	return true;
#else
	return (uint32_t)crc32(0, stored, len) == crc;
#endif
}

/* Go to offset off from the start of the file. */
static int df_seek(struct df_in *in, uint64_t off)
{
	if (in->fd < 0) {
		in->pos = off < in->len ? (size_t)off : in->len;
		return 0;
	}
	if (lseek(in->fd, (off_t)off, SEEK_SET) >= 0) {
		in->pos = (size_t)off;
		return 0;
	}
	if (errno != ESPIPE || off < in->pos)
		return -errno;
	/* a pipe (`cat f.data | csampler report -i /dev/stdin`): only forward, by reading */
	uint8_t skip[4096];
	while (in->pos < off) {
		size_t want = off - in->pos < sizeof(skip) ? (size_t)(off - in->pos) : sizeof(skip), got;
		int ret = df_read_full(in, skip, want, &got);
		if (ret)
			return ret;
		if (got < want)
			return 0; /* the end: the next read finds it */
	}
	return 0;
}

/* The file header: magic, versions, size; leaves in at the first chunk. 0, or -errno after
 * printing one line. */
static int df_read_file_header(struct df_in *in, const char *path, uint64_t *offset)
{
	uint8_t hdr[DF_HEADER_SIZE];
	size_t got;
	int ret = df_read_full(in, hdr, sizeof(hdr), &got);

	if (ret)
		return cs_error(-ret, "read %s: %s", path, strerror(-ret));
	if (got < 8 || memcmp(hdr, DF_MAGIC, 8))
		return cs_error(EINVAL, "%s: not a csampler data file (bad magic)", path);
	if (got < sizeof(hdr))
		return cs_error(EINVAL, "%s: truncated inside the file header: nothing to recover",
				path);
	uint32_t version, min_reader, header_size;
	memcpy(&version, hdr + 8, 4);
	memcpy(&min_reader, hdr + 12, 4);
	memcpy(&header_size, hdr + 24, 4);
	if (in->version)
		*in->version = version;
	if (min_reader > DF_VERSION)
		return cs_error(EPROTONOSUPPORT,
				"%s: format version %u needs a newer csampler (this one reads up to %u)",
				path, version, DF_VERSION);
	if (header_size < DF_HEADER_SIZE || header_size > 4096)
		return cs_error(EINVAL, "%s: corrupt file header (header size %u)", path, header_size);
	ret = df_seek(in, header_size);
	if (ret)
		return cs_error(-ret, "lseek %s: %s", path, strerror(-ret));
	*offset = header_size;
	return 0;
}

/* The nrec records of one chunk, recs[0..len), handed to fn in order. 0, fn's error, or
 * -errno after printing one line. */
static int df_read_records(const char *path, uint64_t offset, const uint8_t *recs, size_t len,
			   uint32_t nrec, bool *seen_end, df_record_fn fn, void *arg)
{
	size_t pos = 0;
	int ret;

	for (uint32_t i = 0; i < nrec; i++) {
		uint16_t type;
		uint32_t size;
		if (len - pos < 8)
			return cs_error(EINVAL, "%s: corrupt chunk at offset %llu (record %u overruns)",
					path, (unsigned long long)offset, i);
		memcpy(&type, recs + pos, 2);
		memcpy(&size, recs + pos + 4, 4);
		if (size < 8 || size > len - pos)
			return cs_error(EINVAL, "%s: corrupt record size %u at offset %llu+%zu", path,
					size, (unsigned long long)offset, pos);
		if (*seen_end)
			return cs_error(EINVAL, "%s: records after the end record", path);
		if (type == DF_END)
			*seen_end = true;
		ret = fn(arg, type, recs + pos + 8, size - 8);
		if (ret)
			return ret;
		pos += size;
	}
	if (pos != len)
		return cs_error(EINVAL, "%s: corrupt chunk at offset %llu (%zu stray bytes)", path,
				(unsigned long long)offset, len - pos);
	return 0;
}

static int df_read_in(struct df_in *in, const char *path, df_record_fn fn, void *arg)
{
	uint8_t ch[DF_CHUNK_HEADER_SIZE];
	uint8_t *stored = NULL, *raw = NULL;
	size_t got;
	uint64_t offset = 0;
	int ret = 0;
	bool seen_end = false;

	ret = df_read_file_header(in, path, &offset);
	if (ret)
		goto out;
	for (;;) {
		uint32_t magic, flags, stored_len, raw_len, crc, nrec;
		ret = df_read_full(in, ch, sizeof(ch), &got);
		if (ret) {
			ret = cs_error(-ret, "read %s: %s", path, strerror(-ret));
			goto out;
		}
		if (got == 0)
			break;
		if (got < sizeof(ch)) {
			ret = 1; /* cut inside a chunk header */
			goto out;
		}
		memcpy(&magic, ch, 4);
		memcpy(&flags, ch + 4, 4);
		memcpy(&stored_len, ch + 8, 4);
		memcpy(&raw_len, ch + 12, 4);
		memcpy(&crc, ch + 16, 4);
		memcpy(&nrec, ch + 20, 4);
		if (magic != DF_CHUNK_MAGIC || stored_len > DF_CHUNK_MAX || raw_len > DF_CHUNK_MAX ||
		    (flags & ~DF_CHUNK_ZSTD) || (!(flags & DF_CHUNK_ZSTD) && raw_len != stored_len)) {
			ret = cs_error(EINVAL, "%s: corrupt chunk header at offset %llu", path,
				       (unsigned long long)offset);
			goto out;
		}
		free(stored);
		stored = cs_malloc(stored_len);
		ret = df_read_full(in, stored, stored_len, &got);
		if (ret) {
			ret = cs_error(-ret, "read %s: %s", path, strerror(-ret));
			goto out;
		}
		if (got < stored_len) {
			ret = 1; /* cut inside a chunk */
			goto out;
		}
		if (!df_crc_ok(stored, stored_len, crc)) {
			ret = cs_error(EINVAL, "%s: corrupt chunk at offset %llu (CRC mismatch)", path,
				       (unsigned long long)offset);
			goto out;
		}
		const uint8_t *recs = stored;
		if (flags & DF_CHUNK_ZSTD) {
			free(raw);
			raw = cs_malloc(raw_len ? raw_len : 1);
			size_t n = ZSTD_decompress(raw, raw_len, stored, stored_len);
			if (ZSTD_isError(n) || n != raw_len) {
				ret = cs_error(EINVAL, "%s: corrupt chunk at offset %llu (zstd: %s)",
					       path, (unsigned long long)offset,
					       ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short");
				goto out;
			}
			recs = raw;
		}
		ret = df_read_records(path, offset, recs, raw_len, nrec, &seen_end, fn, arg);
		if (ret)
			goto out;
		offset += sizeof(ch) + stored_len;
	}
	ret = seen_end ? 0 : 1;
out:
	free(stored);
	free(raw);
	return ret;
}

int df_writer_open(struct df_writer **out, const char *path, bool compress)
{
	return df_writer_open_version(out, path, compress, DF_VERSION);
}

int df_read_version(const char *path, df_record_fn fn, void *arg, uint32_t *version)
{
	struct df_in in = { .fd = open(path, O_RDONLY | O_CLOEXEC), .version = version };
	if (in.fd < 0)
		return cs_error(errno, "cannot open %s: %s%s", path, strerror(errno),
				errno == ENOENT ? "; record one with 'csampler record' or pass -i FILE" : "");
	int ret = df_read_in(&in, path, fn, arg);
	close(in.fd);
	return ret;
}

int df_read(const char *path, df_record_fn fn, void *arg)
{
	return df_read_version(path, fn, arg, NULL);
}

int df_read_mem_version(const void *buf, size_t len, const char *name, df_record_fn fn,
			void *arg, uint32_t *version)
{
	struct df_in in = { .fd = -1, .mem = buf, .len = len, .version = version };
	return df_read_in(&in, name, fn, arg);
}

int df_read_mem(const void *buf, size_t len, const char *name, df_record_fn fn, void *arg)
{
	return df_read_mem_version(buf, len, name, fn, arg, NULL);
}
