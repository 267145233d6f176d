/* ply.c: write the trained Gaussians as the standard 3D Gaussian Splatting .ply (binary little
 * endian; x y z nx ny nz f_dc_0..2 f_rest_0..44 opacity scale_0..2 rot_0..3), which common splat
 * viewers open. As in the original format, f_rest is channel-major (the 15 coefficients of red,
 * then green, then blue), opacity is the logit, scales are logs and rot is (w, x, y, z). */
#include "splat.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PLY_FLOATS (3 + 3 + 3 + 45 + 1 + 3 + 4)

static void ply_put(float *dst, float v)
{
	uint32_t bits;

	memcpy(&bits, &v, 4);
	bits = htole32(bits);
	memcpy(dst, &bits, 4);
}

int ply_write(const char *path, const struct splat_params *p)
{
	FILE *f = fopen(path, "wb");
	float rec[PLY_FLOATS];
	int err = 0;

	if (!f)
		return splat_error(errno, "fopen %s: %s; check that the directory exists and is writable", path,
				   strerror(errno));
	fprintf(f, "ply\nformat binary_little_endian 1.0\nelement vertex %zu\n", p->count);
	static const char *const fixed[] = { "x", "y", "z", "nx", "ny", "nz" };
	for (int k = 0; k < 6; k++)
		fprintf(f, "property float %s\n", fixed[k]);
	for (int k = 0; k < 3; k++)
		fprintf(f, "property float f_dc_%d\n", k);
	for (int k = 0; k < 45; k++)
		fprintf(f, "property float f_rest_%d\n", k);
	fprintf(f, "property float opacity\n");
	for (int k = 0; k < 3; k++)
		fprintf(f, "property float scale_%d\n", k);
	for (int k = 0; k < 4; k++)
		fprintf(f, "property float rot_%d\n", k);
	fprintf(f, "end_header\n");
	for (size_t i = 0; i < p->count && !err; i++) {
		int o = 0;
		for (int k = 0; k < 3; k++)
			ply_put(&rec[o++], p->means[3 * i + k]);
		for (int k = 0; k < 3; k++)
			ply_put(&rec[o++], 0.0f);
		for (int c = 0; c < 3; c++)
			ply_put(&rec[o++], p->sh[48 * i + c]);
		for (int c = 0; c < 3; c++)
			for (int k = 1; k < SPLAT_SH_COEFFS; k++)
				ply_put(&rec[o++], p->sh[48 * i + 3 * k + c]);
		ply_put(&rec[o++], p->opacity_logits[i]);
		for (int k = 0; k < 3; k++)
			ply_put(&rec[o++], p->log_scales[3 * i + k]);
		for (int k = 0; k < 4; k++)
			ply_put(&rec[o++], p->quats[4 * i + k]);
		if (fwrite(rec, sizeof(float), PLY_FLOATS, f) != PLY_FLOATS)
			err = -EIO;
	}
	if (fclose(f) != 0 && !err)
		err = -errno;
	if (err)
		return splat_error(-err, "writing %s: %s; check free space and permissions", path, strerror(-err));
	return 0;
}
