/* ksymcache.c: the kernel image's text symbols kept on disk (ksymcache.h). One entry a boot,
 * $XDG_CACHE_HOME/csampler/ksym-v1/BOOT_ID.ksym (else ~/.cache/...; mode 0600 in a 0700
 * folder: kernel addresses are for root's eyes), written to a temporary file and renamed into
 * place; a header with the format version, the key (boot id, kernel release and version) and
 * the counts, then the addresses, the names' offsets, the names, and a checksum of everything
 * before it. An entry that is short, damaged, from another version or kernel is ignored. */
#include "unwind/ksymcache.h"

#include "base/cs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#define KSYMCACHE_MAGIC 0x316d79736b736331ull /* "1csksym1" */
#define KSYMCACHE_VERSION 1u
#define KSYMCACHE_MAX_SYMS (4u << 20)

struct ksymcache_head {
	uint64_t magic;
	uint32_t version, pad;
	uint64_t key;              /* hash of the boot id, the kernel's release and version */
	uint64_t lo, hi;
	uint64_t nsyms, names_bytes;
};

static size_t ksymcache_align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

static uint64_t ksymcache_key(const char *boot)
{
	struct utsname u;
	char key[512];
	if (uname(&u) < 0)
		memset(&u, 0, sizeof(u));
	int n = snprintf(key, sizeof(key), "%s\n%s\n%s", boot, u.release, u.version);
	return cs_hash_bytes(key, n > 0 ? (size_t)n : 0, KSYMCACHE_MAGIC);
}

/* This boot's id (a UUID), or -errno. */
static int ksymcache_boot(char *buf, size_t len)
{
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n < 8)
		return -EINVAL;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	for (char *p = buf; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || *p == '-'))
			return -EINVAL; /* it names a file: nothing else may be in it */
	return 0;
}

int ksymcache_read_at(const char *dir, const char *boot, struct ksymcache_table *t)
{
	char path[4200];
	struct stat st;
	int ret = -EINVAL;

	*t = (struct ksymcache_table){ 0 };
	snprintf(path, sizeof(path), "%s/%s.ksym", dir, boot);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_size < (off_t)(sizeof(struct ksymcache_head) + 8)) {
		close(fd);
		return -EINVAL;
	}
	size_t len = (size_t)st.st_size;
	uint8_t *buf = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (buf == MAP_FAILED)
		return -errno;
	struct ksymcache_head h;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != KSYMCACHE_MAGIC || h.version != KSYMCACHE_VERSION ||
	    h.key != ksymcache_key(boot) || !h.nsyms || h.nsyms > KSYMCACHE_MAX_SYMS ||
	    h.names_bytes > len || h.lo >= h.hi)
		goto out;
	size_t addrs_at = sizeof(h), offs_at = addrs_at + h.nsyms * 8,
	       names_at = offs_at + ksymcache_align8(h.nsyms * 4),
	       sum_at = names_at + ksymcache_align8(h.names_bytes);
	uint64_t sum;
	if (sum_at + 8 != len)
		goto out;
	memcpy(&sum, buf + sum_at, 8);
	const char *names = (const char *)buf + names_at;
	if (sum != cs_hash_bytes(buf, sum_at, KSYMCACHE_MAGIC) || !h.names_bytes ||
	    names[h.names_bytes - 1])
		goto out;
	t->syms = cs_malloc(h.nsyms * sizeof(*t->syms));
	for (size_t i = 0; i < h.nsyms; i++) {
		uint64_t addr;
		uint32_t off;
		memcpy(&addr, buf + addrs_at + i * 8, 8);
		memcpy(&off, buf + offs_at + i * 4, 4);
		if (off >= h.names_bytes || addr < h.lo || addr >= h.hi ||
		    (i && addr < t->syms[i - 1].addr)) {
			free(t->syms);
			t->syms = NULL;
			goto out;
		}
		t->syms[i] = (struct kallsym){ addr, names + off };
	}
	t->n = h.nsyms;
	t->lo = h.lo;
	t->hi = h.hi;
	t->map = buf;
	t->map_size = len;
	return 0;
out:
	munmap(buf, len);
	return ret;
}

int ksymcache_read(struct ksymcache_table *t)
{
	char dir[3900], boot[64];
	int ret = cs_cache_dir("ksym-v1", "CSAMPLER_KSYM_CACHE", dir, sizeof(dir));
	if (!ret)
		ret = ksymcache_boot(boot, sizeof(boot));
	if (ret) {
		*t = (struct ksymcache_table){ 0 };
		return ret;
	}
	return ksymcache_read_at(dir, boot, t);
}

/* The address of symbol name in syms[0, n), or 0. */
static uint64_t ksymcache_find(const struct kallsym *syms, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(syms[i].name, name))
			return syms[i].addr;
	return 0;
}

/* Entries of other boots: removed (one a boot would pile up). */
static void ksymcache_prune(const char *dir, const char *keep)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	if (!d)
		return;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len > 5 && !strcmp(e->d_name + len - 5, ".ksym") && strcmp(e->d_name, keep))
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}

void ksymcache_write_at(const char *dir, const char *boot, const struct kallsym *syms, size_t n)
{
	uint64_t lo = ksymcache_find(syms, n, "_stext"), hi = ksymcache_find(syms, n, "_etext");
	if (!lo || hi <= lo)
		return;
	struct cs_buf names = { 0 }, addrs = { 0 }, offs = { 0 };
	struct ksymcache_head h = { .magic = KSYMCACHE_MAGIC, .version = KSYMCACHE_VERSION,
				    .key = ksymcache_key(boot), .lo = lo, .hi = hi };
	for (size_t i = 0; i < n; i++) {
		if (syms[i].addr < lo || syms[i].addr >= hi)
			continue;
		uint32_t off = (uint32_t)names.len;
		cs_buf_put(&names, syms[i].name, strlen(syms[i].name) + 1);
		cs_buf_put(&addrs, &syms[i].addr, 8);
		cs_buf_put(&offs, &off, 4);
		h.nsyms++;
	}
	h.names_bytes = names.len;
	static const uint8_t zeros[8];
	struct cs_buf b = { 0 };
	cs_buf_put(&b, &h, sizeof(h));
	cs_buf_put(&b, addrs.data, addrs.len);
	cs_buf_put(&b, offs.data, offs.len);
	cs_buf_put(&b, zeros, ksymcache_align8(offs.len) - offs.len);
	cs_buf_put(&b, names.data, names.len);
	cs_buf_put(&b, zeros, ksymcache_align8(names.len) - names.len);
	uint64_t sum = cs_hash_bytes(b.data, b.len, KSYMCACHE_MAGIC);
	cs_buf_put(&b, &sum, sizeof(sum));
	char path[4200], tmp[4300], name[128];
	snprintf(name, sizeof(name), "%s.ksym", boot);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	int fd = h.nsyms && h.nsyms <= KSYMCACHE_MAX_SYMS ? mkostemp(tmp, O_CLOEXEC) : -1;
	if (fd >= 0) {
		bool ok = write(fd, b.data, b.len) == (ssize_t)b.len;
		ok = close(fd) == 0 && ok;
		if (!ok || rename(tmp, path) < 0)
			unlink(tmp);
		else
			ksymcache_prune(dir, name);
	}
	cs_buf_free(&b);
	cs_buf_free(&names);
	cs_buf_free(&addrs);
	cs_buf_free(&offs);
}

void ksymcache_write(const struct kallsym *syms, size_t n)
{
	char dir[3900], boot[64];
	if (!cs_cache_dir("ksym-v1", "CSAMPLER_KSYM_CACHE", dir, sizeof(dir)) &&
	    !ksymcache_boot(boot, sizeof(boot)))
		ksymcache_write_at(dir, boot, syms, n);
}

void ksymcache_free(struct ksymcache_table *t)
{
	free(t->syms);
	if (t->map)
		munmap(t->map, t->map_size);
	*t = (struct ksymcache_table){ 0 };
}
