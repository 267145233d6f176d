/* image_io.c: write rendered and ground-truth images as 8-bit PNG (every row unfiltered, or with
 * the row filters of image_write_png) or binary PPM.
 * PNG framing (signature, IHDR/IDAT/IEND chunks with CRCs) is written here because libpng is not
 * a dependency; zlib does the deflate (compress2) and the chunk CRCs (crc32). */
#include "splat.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static unsigned char image_byte(float v)
{
	v = v < 0 ? 0 : v > 1 ? 1 : v;
	return (unsigned char)(v * 255.0f + 0.5f);
}

static void put_be32(unsigned char *p, uint32_t v)
{
	p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v;
}

static int png_chunk(FILE *f, const char *type, const unsigned char *data, size_t len)
{
	unsigned char hdr[8], crc_bytes[4];
	uLong crc = crc32(0, (const Bytef *)type, 4);

	put_be32(hdr, (uint32_t)len);
	memcpy(hdr + 4, type, 4);
	if (len)
		crc = crc32(crc, data, (uInt)len);
	put_be32(crc_bytes, (uint32_t)crc);
	if (fwrite(hdr, 1, 8, f) != 8 || (len && fwrite(data, 1, len, f) != len) || fwrite(crc_bytes, 1, 4, f) != 4)
		return -EIO;
	return 0;
}

/* Deflate the filtered rows raw into *zbuf (the caller frees it), *zlen bytes. */
static int png_deflate(const char *path, const unsigned char *raw, size_t raw_len, unsigned char **zbuf,
		       uLongf *zlen)
{
	*zlen = compressBound(raw_len);
	*zbuf = splat_malloc(*zlen);
	int zrc = compress2(*zbuf, zlen, raw, raw_len, Z_DEFAULT_COMPRESSION);
	if (zrc != Z_OK)
		return splat_error(EIO, "compress2 for %s: zlib error %d", path, zrc);
	return 0;
}

/* The signature and the IHDR, IDAT (zbuf, zlen bytes) and IEND chunks of a w×h 8-bit RGB PNG. */
static int png_frame(FILE *f, int w, int h, const unsigned char *zbuf, uLongf zlen)
{
	static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	unsigned char ihdr[13];

	put_be32(ihdr, (uint32_t)w);
	put_be32(ihdr + 4, (uint32_t)h);
	ihdr[8] = 8;  /* bit depth */
	ihdr[9] = 2;  /* colour type: truecolour */
	ihdr[10] = ihdr[11] = ihdr[12] = 0;
	if (fwrite(sig, 1, 8, f) != 8 || png_chunk(f, "IHDR", ihdr, 13) || png_chunk(f, "IDAT", zbuf, zlen) ||
	    png_chunk(f, "IEND", NULL, 0))
		return -EIO;
	return 0;
}

/* Close f, and say what went wrong writing path (err, or fclose's). */
static int image_close(FILE *f, const char *path, int err)
{
	if (fclose(f) != 0 && !err)
		err = -errno;
	if (err)
		splat_error(-err, "writing %s: %s; check free space and permissions", path, strerror(-err));
	return err;
}

static int image_paeth(int a, int b, int c)
{
	int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);

	return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Filter row `cur` (n bytes, 3 per pixel; prev the unfiltered row above, NULL for the first)
 * with PNG filter type f (0 none, 1 sub, 2 up, 3 average, 4 paeth) into out. */
static void image_filter_row(int f, const unsigned char *cur, const unsigned char *prev, size_t n, unsigned char *out)
{
	for (size_t i = 0; i < n; i++) {
		int a = i >= 3 ? cur[i - 3] : 0, b = prev ? prev[i] : 0, c = prev && i >= 3 ? prev[i - 3] : 0, pred;
		pred = f == 1 ? a : f == 2 ? b : f == 3 ? (a + b) / 2 : f == 4 ? image_paeth(a, b, c) : 0;
		out[i] = (unsigned char)(cur[i] - pred);
	}
}

/* The filtered rows (filter byte + 3w bytes each) of an interleaved 8-bit RGB image. filter
 * 0..4 uses that filter on every row; IMAGE_FILTER_ADAPTIVE picks per row the filter whose
 * bytes, read as signed, have the smallest sum of magnitudes (libpng's default heuristic). */
static void image_filter(const unsigned char *pix, int w, int h, int filter, unsigned char *raw)
{
	size_t n = 3 * (size_t)w, row = 1 + n;
	unsigned char *trial = splat_malloc(n);

	for (int y = 0; y < h; y++) {
		const unsigned char *cur = pix + (size_t)y * n, *prev = y ? cur - n : NULL;
		int best = filter;
		if (filter == IMAGE_FILTER_ADAPTIVE) {
			unsigned long best_sum = (unsigned long)-1;
			for (int f = 0; f <= 4; f++) {
				unsigned long sum = 0;
				image_filter_row(f, cur, prev, n, trial);
				for (size_t i = 0; i < n; i++)
					sum += trial[i] < 128 ? trial[i] : 256 - trial[i];
				if (sum < best_sum) {
					best_sum = sum;
					best = f;
				}
			}
		}
		raw[y * row] = (unsigned char)best;
		image_filter_row(best, cur, prev, n, raw + y * row + 1);
	}
	free(trial);
}

int image_write_png(const char *path, const float *rgb, int w, int h, int filter)
{
	size_t hw = (size_t)w * h, raw_len = (1 + 3 * (size_t)w) * h;
	unsigned char *pix = splat_malloc(3 * hw), *raw = splat_malloc(raw_len), *zbuf = NULL;
	FILE *f = NULL;
	int err = 0;

	if (filter != IMAGE_FILTER_ADAPTIVE && (filter < 0 || filter > 4)) {
		err = splat_error(EINVAL, "image_write_png %s: filter %d is not 0..4 or adaptive", path, filter);
		goto out;
	}
	for (size_t i = 0; i < hw; i++)
		for (int c = 0; c < 3; c++)
			pix[3 * i + c] = image_byte(rgb[c * hw + i]);
	image_filter(pix, w, h, filter, raw);
	uLongf zlen;
	if ((err = png_deflate(path, raw, raw_len, &zbuf, &zlen)))
		goto out;
	if (!(f = fopen(path, "wb"))) {
		err = splat_error(errno, "fopen %s: %s; check that the directory exists and is writable", path,
				  strerror(errno));
		goto out;
	}
	err = image_close(f, path, png_frame(f, w, h, zbuf, zlen));
out:
	free(pix);
	free(raw);
	free(zbuf);
	return err;
}

int image_write(const char *path, const float *rgb, int w, int h)
{
	size_t hw = (size_t)w * h, row = 1 + 3 * (size_t)w, raw_len = row * h;
	size_t dot = strlen(path) >= 4 ? strlen(path) - 4 : 0;
	int png = !strcmp(path + dot, ".png");
	unsigned char *raw = splat_malloc(raw_len), *zbuf = NULL;
	FILE *f = fopen(path, "wb");
	int err = 0;

	if (!f) {
		err = splat_error(errno, "fopen %s: %s; check that the directory exists and is writable",
				  path, strerror(errno));
		goto out;
	}
	if (png) {
		for (int y = 0; y < h; y++) {
			raw[y * row] = 0; /* filter: none */
			for (int x = 0; x < w; x++)
				for (int c = 0; c < 3; c++)
					raw[y * row + 1 + 3 * x + c] = image_byte(rgb[c * hw + (size_t)y * w + x]);
		}
		uLongf zlen;
		if ((err = png_deflate(path, raw, raw_len, &zbuf, &zlen))) {
			fclose(f);   /* compress2 has said what failed */
			goto out;
		}
		err = png_frame(f, w, h, zbuf, zlen);
	} else {
		fprintf(f, "P6\n%d %d\n255\n", w, h);
		for (size_t i = 0; i < hw; i++)
			for (int c = 0; c < 3; c++)
				raw[3 * i + c] = image_byte(rgb[c * hw + i]);
		if (fwrite(raw, 1, 3 * hw, f) != 3 * hw)
			err = -EIO;
	}
	err = image_close(f, path, err);
out:
	free(raw);
	free(zbuf);
	return err;
}
