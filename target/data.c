/* data.c: splat-train's data stage for --data disk, a training input pipeline as real trainers
 * have one: the training views are written as PNG files at start; every iteration then reads
 * its view from disk (data_load_view), decodes it on the CPU (data_decode_png), composites a
 * random background (data_apply_background) and uploads it as the backend's target image.
 * --loader inline does all of that on the training thread, so the device waits for it;
 * --loader prefetch runs it on a loader thread ("splat-loader") a few views ahead, into host
 * buffers from the backend (page-locked for CUDA), and the training thread only uploads.
 *
 * The random background of an iteration is a function of (seed, iteration) alone, so both
 * loaders train the same model. It replaces the scene's background where the ground truth
 * shows background: gt' = gt + T·(bg - scene background), T the teacher's final transmittance
 * (kept in memory beside the scene; the PNG files hold 8-bit RGB, as a dataset's images would
 * hold RGB and a mask). The render of that iteration uses the same colour (set_background), as
 * 3DGS trains with --random_background; evaluation uses the scene's background.
 *
 * PNG decoding is written here, as image_io.c writes PNG, because libpng is not a dependency:
 * zlib inflates, and the only images read are the ones image_write_png wrote (8-bit RGB, no
 * interlace, any of the five row filters), which takes a hundred lines to decode exactly. */
#include "splat.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define DATA_SLOTS 3                       /* the prefetch queue: views prepared ahead */
#define DATA_RNG_BACKGROUND 0x44415441ull  /* "DATA": a stream no iteration-indexed one reaches */

enum data_slot_state { SLOT_FREE, SLOT_READY, SLOT_IN_USE };

/* One view being prepared: its file's bytes and the decoded pixels (per thread). */
struct data_buf {
	unsigned char *file;
	size_t file_len, file_cap;
	unsigned char *rgb8;                   /* 3·H·W interleaved */
};

struct data_slot {
	float *image;                          /* planar 3·H·W, from ops->host_alloc */
	float bg[3];
	int it;
	enum data_slot_state state;
};

struct data_stage {
	struct data_config cfg;
	const struct splat_scene *scene;
	const struct splat_backend_ops *ops;
	void *ctx;
	char dir[4096];
	int made_dir;                          /* 1: mkdtemp'd here, removed by data_close */
	size_t *written;                       /* views whose file data_open wrote */
	size_t n_written;
	int width, height;
	size_t hw;

	/* inline */
	struct data_buf buf;
	float *image;

	/* prefetch */
	struct data_slot slots[DATA_SLOTS];
	struct data_slot *in_flight;           /* uploaded, not yet waited for */
	struct data_buf loader_buf;
	pthread_t loader;
	int loader_started, stop, loader_err;
	pthread_mutex_t mu;
	pthread_cond_t slot_free, slot_ready;

	double train_thread_s;                 /* time the training thread spent in data_next */
	int nexts;
};

/* ---- PNG decoding ---- */

static uint32_t data_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int data_paeth(int a, int b, int c)
{
	int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);

	return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Undo the row filters of raw (h rows of 1 + 3w bytes) into rgb, 3 bytes per pixel. */
static int data_unfilter(const unsigned char *raw, int w, int h, unsigned char *rgb)
{
	size_t n = 3 * (size_t)w;

	for (int y = 0; y < h; y++) {
		const unsigned char *in = raw + (size_t)y * (n + 1) + 1;
		unsigned char *cur = rgb + (size_t)y * n;
		const unsigned char *prev = y ? cur - n : NULL;
		int f = in[-1];
		size_t i;
		switch (f) {
		case 0:
			memcpy(cur, in, n);
			break;
		case 1: /* sub */
			memcpy(cur, in, 3);
			for (i = 3; i < n; i++)
				cur[i] = (unsigned char)(in[i] + cur[i - 3]);
			break;
		case 2: /* up */
			for (i = 0; i < n; i++)
				cur[i] = (unsigned char)(in[i] + (prev ? prev[i] : 0));
			break;
		case 3: /* average */
			for (i = 0; i < n; i++) {
				int a = i >= 3 ? cur[i - 3] : 0, b = prev ? prev[i] : 0;
				cur[i] = (unsigned char)(in[i] + (a + b) / 2);
			}
			break;
		case 4: /* paeth */
			for (i = 0; i < n; i++) {
				int a = i >= 3 ? cur[i - 3] : 0, b = prev ? prev[i] : 0;
				int c = prev && i >= 3 ? prev[i - 3] : 0;
				cur[i] = (unsigned char)(in[i] + data_paeth(a, b, c));
			}
			break;
		default:
			return splat_error(EINVAL, "PNG: row %d has filter type %d (not 0..4)", y, f);
		}
	}
	return 0;
}

__attribute__((noinline, noclone)) int data_decode_png(const unsigned char *png, size_t len, int w, int h, unsigned char *rgb)
{
	static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	size_t raw_len = (1 + 3 * (size_t)w) * h, pos = 8;
	unsigned char *raw = splat_malloc(raw_len);
	z_stream zs = { 0 };
	int zrc = Z_OK, err = 0, seen_ihdr = 0, seen_end = 0;

	if (len < 8 || memcmp(png, sig, 8)) {
		err = splat_error(EINVAL, "PNG: no PNG signature");
		goto out;
	}
	if (inflateInit(&zs) != Z_OK) {
		err = splat_error(ENOMEM, "PNG: inflateInit failed: %s", zs.msg ? zs.msg : "out of memory");
		goto out;
	}
	zs.next_out = raw;
	zs.avail_out = (uInt)raw_len;
	while (!seen_end) {
		if (len - pos < 12) {
			err = splat_error(EINVAL, "PNG: truncated at byte %zu (no IEND chunk)", pos);
			goto out;
		}
		uint32_t clen = data_be32(png + pos);
		const unsigned char *type = png + pos + 4, *data = png + pos + 8;
		if (clen > len - pos - 12) {
			err = splat_error(EINVAL, "PNG: chunk at byte %zu runs past the end of the file", pos);
			goto out;
		}
		uLong crc = crc32(crc32(0, type, 4), data, clen);
		if (crc != data_be32(data + clen)) {
			err = splat_error(EINVAL, "PNG: CRC mismatch in the %.4s chunk at byte %zu", (const char *)type, pos);
			goto out;
		}
		if (!memcmp(type, "IHDR", 4)) {
			if (clen != 13 || (int)data_be32(data) != w || (int)data_be32(data + 4) != h || data[8] != 8 ||
			    data[9] != 2 || data[10] || data[11] || data[12]) {
				err = splat_error(EINVAL, "PNG: not a %dx%d 8-bit RGB non-interlaced image", w, h);
				goto out;
			}
			seen_ihdr = 1;
		} else if (!memcmp(type, "IDAT", 4)) {
			if (!seen_ihdr) {
				err = splat_error(EINVAL, "PNG: IDAT before IHDR");
				goto out;
			}
			zs.next_in = (Bytef *)data;
			zs.avail_in = clen;
			while (zs.avail_in && zrc != Z_STREAM_END) {
				zrc = inflate(&zs, Z_NO_FLUSH);
				if (zrc == Z_BUF_ERROR && !zs.avail_out) {
					err = splat_error(EINVAL, "PNG: more image data than %dx%d pixels", w, h);
					goto out;
				}
				if (zrc != Z_OK && zrc != Z_STREAM_END) {
					err = splat_error(EINVAL, "PNG: inflate: %s", zs.msg ? zs.msg : "corrupt data");
					goto out;
				}
			}
		} else if (!memcmp(type, "IEND", 4)) {
			seen_end = 1;
		} else if (!(type[0] & 0x20)) {
			err = splat_error(EINVAL, "PNG: unknown critical chunk %.4s", (const char *)type);
			goto out;
		}
		pos += 12 + (size_t)clen;
	}
	if (zrc != Z_STREAM_END || zs.avail_out) {
		err = splat_error(EINVAL, "PNG: image data ends %zu bytes short of %dx%d pixels", (size_t)zs.avail_out, w, h);
		goto out;
	}
	err = data_unfilter(raw, w, h, rgb);
out:
	inflateEnd(&zs);
	free(raw);
	return err;
}

/* ---- one view ---- */

void data_background(uint64_t seed, int it, float bg[3])
{
	for (int c = 0; c < 3; c++)
		bg[c] = (float)splat_rng_uniform(seed, DATA_RNG_BACKGROUND, 3 * (uint64_t)it + c);
}

static void data_view_path(const struct data_stage *ds, size_t view, char *path, size_t len)
{
	snprintf(path, len, "%s/view_%02zu.png", ds->dir, view);
}

/* Read view's file into buf->file and decode it into buf->rgb8. */
__attribute__((noinline, noclone)) static int data_load_view(struct data_stage *ds, size_t view, struct data_buf *buf)
{
	char path[4200];
	struct stat st;
	int fd, err = 0;

	data_view_path(ds, view, path, sizeof(path));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st) < 0) {
		err = splat_error(errno, "--data disk: open %s: %s; was the data directory removed?", path,
				  strerror(errno));
		goto out;
	}
	if ((size_t)st.st_size > buf->file_cap) {
		free(buf->file);
		buf->file_cap = (size_t)st.st_size;
		buf->file = splat_malloc(buf->file_cap);
	}
	buf->file_len = 0;
	while (buf->file_len < (size_t)st.st_size) {
		ssize_t n = read(fd, buf->file + buf->file_len, (size_t)st.st_size - buf->file_len);
		if (n <= 0) {
			err = splat_error(n ? errno : EIO, "--data disk: read %s: %s", path,
					  n ? strerror(errno) : "unexpected end of file");
			goto out;
		}
		buf->file_len += (size_t)n;
	}
	if ((err = data_decode_png(buf->file, buf->file_len, ds->width, ds->height, buf->rgb8)))
		splat_error(-err, "--data disk: %s is not a view this run wrote", path);
out:
	if (fd >= 0)
		close(fd);
	return err;
}

/* image (planar floats) = the decoded pixels with the scene's background replaced by bg where
 * the view shows background (weight T, its final transmittance). */
__attribute__((noinline, noclone)) static void data_apply_background(const struct data_stage *ds, size_t view,
							    const unsigned char *rgb8, const float bg[3], float *image)
{
	const float *trans = ds->scene->gt_trans + view * ds->hw, *sbg = ds->scene->teacher.background;
	float d[3] = { bg[0] - sbg[0], bg[1] - sbg[1], bg[2] - sbg[2] };

	for (int c = 0; c < 3; c++) {
		float *out = image + c * ds->hw;
		for (size_t i = 0; i < ds->hw; i++)
			out[i] = rgb8[3 * i + c] * (1.0f / 255.0f) + trans[i] * d[c];
	}
}

/* Everything but the upload: load, decode, background. */
static int data_prepare(struct data_stage *ds, int it, struct data_buf *buf, float *image, float bg[3])
{
	size_t view = ds->cfg.views[it - 1];
	int err;

	if ((err = data_load_view(ds, view, buf)))
		return err;
	data_background(ds->cfg.seed, it, bg);
	data_apply_background(ds, view, buf->rgb8, bg, image);
	return 0;
}

/* ---- the prefetch loader ---- */

static void *data_loader_main(void *arg)
{
	struct data_stage *ds = arg;

	for (int it = 1; it <= ds->cfg.iters; it++) {
		struct data_slot *slot = &ds->slots[(it - 1) % DATA_SLOTS];
		int err;
		pthread_mutex_lock(&ds->mu);
		while (slot->state != SLOT_FREE && !ds->stop)
			pthread_cond_wait(&ds->slot_free, &ds->mu);
		int stop = ds->stop;
		pthread_mutex_unlock(&ds->mu);
		if (stop)
			break;
		err = data_prepare(ds, it, &ds->loader_buf, slot->image, slot->bg);
		pthread_mutex_lock(&ds->mu);
		if (err) {
			ds->loader_err = err;
		} else {
			slot->it = it;
			slot->state = SLOT_READY;
		}
		pthread_cond_broadcast(&ds->slot_ready);
		pthread_mutex_unlock(&ds->mu);
		if (err)
			break;
	}
	return NULL;
}

/* Give the slot uploaded last back to the loader once the backend has read it. */
static int data_release_in_flight(struct data_stage *ds)
{
	int err = 0;

	if (!ds->in_flight)
		return 0;
	err = ds->ops->upload_wait(ds->ctx);
	pthread_mutex_lock(&ds->mu);
	ds->in_flight->state = SLOT_FREE;
	pthread_cond_broadcast(&ds->slot_free);
	pthread_mutex_unlock(&ds->mu);
	ds->in_flight = NULL;
	return err;
}

static int data_next_timed(struct data_stage *ds, int it);

int data_next(struct data_stage *ds, int it)
{
	double t0 = splat_now_seconds();
	int err = data_next_timed(ds, it);

	ds->train_thread_s += splat_now_seconds() - t0;
	ds->nexts++;
	return err;
}

double data_ms_per_iter(const struct data_stage *ds)
{
	return ds->nexts ? 1000.0 * ds->train_thread_s / ds->nexts : 0;
}

static int data_next_timed(struct data_stage *ds, int it)
{
	int err;

	if (it < 1 || it > ds->cfg.iters)
		return splat_error(EINVAL, "--data disk: iteration %d is outside 1..%d", it, ds->cfg.iters);
	if (ds->cfg.loader == DATA_INLINE) {
		float bg[3];
		if ((err = data_prepare(ds, it, &ds->buf, ds->image, bg)) ||
		    (err = ds->ops->set_background(ds->ctx, bg)))
			return err;
		return ds->ops->upload_target(ds->ctx, ds->image, 0);
	}
	if ((err = data_release_in_flight(ds)))
		return err;
	struct data_slot *slot = &ds->slots[(it - 1) % DATA_SLOTS];
	pthread_mutex_lock(&ds->mu);
	while (!(slot->state == SLOT_READY && slot->it == it) && !ds->loader_err)
		pthread_cond_wait(&ds->slot_ready, &ds->mu);
	err = slot->state == SLOT_READY && slot->it == it ? 0 : ds->loader_err;
	if (!err)
		slot->state = SLOT_IN_USE;
	pthread_mutex_unlock(&ds->mu);
	if (err)
		return err;
	/* given back at the next data_next (or data_close), after upload_wait */
	ds->in_flight = slot;
	if ((err = ds->ops->set_background(ds->ctx, slot->bg)))
		return err;
	return ds->ops->upload_target(ds->ctx, slot->image, 1);
}

int data_scene_background(struct data_stage *ds)
{
	return ds->ops->set_background(ds->ctx, ds->scene->teacher.background);
}

const char *data_dir(const struct data_stage *ds)
{
	return ds->dir;
}

/* ---- life cycle ---- */

static int data_make_dir(struct data_stage *ds)
{
	struct stat st;

	if (ds->cfg.dir) {
		snprintf(ds->dir, sizeof(ds->dir), "%s", ds->cfg.dir);
		if (stat(ds->dir, &st) != 0 && mkdir(ds->dir, 0755) != 0)
			return splat_error(errno, "--data-dir %s: mkdir: %s", ds->dir, strerror(errno));
		if (stat(ds->dir, &st) != 0 || !S_ISDIR(st.st_mode))
			return splat_error(ENOTDIR, "--data-dir %s: not a directory", ds->dir);
		return 0;
	}
	const char *tmp = getenv("TMPDIR");
	snprintf(ds->dir, sizeof(ds->dir), "%s/splat-train-data.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
	if (!mkdtemp(ds->dir))
		return splat_error(errno, "--data disk: mkdtemp %s: %s; set TMPDIR to a writable directory or give "
				   "--data-dir", ds->dir, strerror(errno));
	ds->made_dir = 1;
	return 0;
}

int data_open(const struct data_config *cfg, const struct splat_scene *scene,
	      const struct splat_backend_ops *ops, void *ctx, struct data_stage **out)
{
	struct data_stage *ds;
	size_t hw3;
	int err, rc;

	*out = NULL;
	if (!ops->set_background || !ops->upload_target || !ops->upload_wait || !ops->host_alloc || !ops->host_free)
		return splat_error(ENOTSUP, "--data disk: the %s backend has no data stage; use --data memory", ops->name);
	ds = splat_calloc(1, sizeof(*ds));
	*out = ds;
	ds->cfg = *cfg;
	ds->scene = scene;
	ds->ops = ops;
	ds->ctx = ctx;
	ds->width = scene->width;
	ds->height = scene->height;
	ds->hw = (size_t)scene->width * scene->height;
	hw3 = 3 * ds->hw;
	pthread_mutex_init(&ds->mu, NULL);
	pthread_cond_init(&ds->slot_free, NULL);
	pthread_cond_init(&ds->slot_ready, NULL);
	if ((err = data_make_dir(ds)))
		return err;

	/* the dataset: every training view, adaptively filtered as libpng would write it */
	ds->written = splat_calloc(scene->n_train, sizeof(size_t));
	for (size_t k = 0; k < scene->n_train; k++) {
		char path[4200];
		size_t v = scene->train_views[k];
		data_view_path(ds, v, path, sizeof(path));
		if ((err = image_write_png(path, scene->gt + v * hw3, ds->width, ds->height, IMAGE_FILTER_ADAPTIVE))) {
			unlink(path);   /* a partial file would keep data_close from removing the directory */
			return err;
		}
		ds->written[ds->n_written++] = v;
	}

	if (cfg->loader == DATA_INLINE) {
		ds->buf.rgb8 = splat_malloc(hw3);
		ds->image = splat_malloc(hw3 * sizeof(float));
		return 0;
	}
	ds->loader_buf.rgb8 = splat_malloc(hw3);
	for (int s = 0; s < DATA_SLOTS; s++)
		if ((err = ops->host_alloc(ctx, hw3 * sizeof(float), (void **)&ds->slots[s].image)))
			return err;
	if ((rc = pthread_create(&ds->loader, NULL, data_loader_main, ds)))
		return splat_error(rc, "--loader prefetch: pthread_create: %s; use --loader inline", strerror(rc));
	pthread_setname_np(ds->loader, "splat-loader");
	ds->loader_started = 1;
	return 0;
}

void data_close(struct data_stage *ds)
{
	if (!ds)
		return;
	if (ds->loader_started) {
		pthread_mutex_lock(&ds->mu);
		ds->stop = 1;
		pthread_cond_broadcast(&ds->slot_free);
		pthread_mutex_unlock(&ds->mu);
		pthread_join(ds->loader, NULL);
	}
	if (ds->in_flight)
		ds->ops->upload_wait(ds->ctx);
	for (int s = 0; s < DATA_SLOTS; s++)
		if (ds->slots[s].image)
			ds->ops->host_free(ds->ctx, ds->slots[s].image);
	if (ds->made_dir) {
		char path[4200];
		for (size_t k = 0; k < ds->n_written; k++) {
			data_view_path(ds, ds->written[k], path, sizeof(path));
			if (unlink(path) != 0)
				splat_warn("--data disk: unlink %s: %s", path, strerror(errno));
		}
		if (rmdir(ds->dir) != 0)
			splat_warn("--data disk: rmdir %s: %s; remove it by hand", ds->dir, strerror(errno));
	}
	pthread_mutex_destroy(&ds->mu);
	pthread_cond_destroy(&ds->slot_free);
	pthread_cond_destroy(&ds->slot_ready);
	free(ds->written);
	free(ds->buf.file);
	free(ds->buf.rgb8);
	free(ds->image);
	free(ds->loader_buf.file);
	free(ds->loader_buf.rgb8);
	free(ds);
}
