/* image_io.c: write rendered and ground-truth images as 8-bit PNG or binary PPM.
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
		uLongf zlen = compressBound(raw_len);
		zbuf = splat_malloc(zlen);
		int zrc = compress2(zbuf, &zlen, raw, raw_len, Z_DEFAULT_COMPRESSION);
		if (zrc != Z_OK) {
			err = splat_error(EIO, "compress2 for %s: zlib error %d", path, zrc);
			goto out;
		}
		unsigned char ihdr[13];
		put_be32(ihdr, (uint32_t)w);
		put_be32(ihdr + 4, (uint32_t)h);
		ihdr[8] = 8;  /* bit depth */
		ihdr[9] = 2;  /* colour type: truecolour */
		ihdr[10] = ihdr[11] = ihdr[12] = 0;
		static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
		if (fwrite(sig, 1, 8, f) != 8 || png_chunk(f, "IHDR", ihdr, 13) || png_chunk(f, "IDAT", zbuf, zlen) ||
		    png_chunk(f, "IEND", NULL, 0))
			err = -EIO;
	} else {
		fprintf(f, "P6\n%d %d\n255\n", w, h);
		for (size_t i = 0; i < hw; i++)
			for (int c = 0; c < 3; c++)
				raw[3 * i + c] = image_byte(rgb[c * hw + i]);
		if (fwrite(raw, 1, 3 * hw, f) != 3 * hw)
			err = -EIO;
	}
	if (fclose(f) != 0 && !err)
		err = -errno;
	if (err)
		splat_error(-err, "writing %s: %s; check free space and permissions", path, strerror(-err));
out:
	free(raw);
	free(zbuf);
	return err;
}
