/* gpu_math.cuh: the per-Gaussian and per-pixel math of splat-train's CUDA backend: projection
 * (EWA), SH colour, the blend's α, one back-to-front blend-gradient step, the SSIM pixel, the
 * backward projection, the Adam update and the sort key. Written in the common subset of C and
 * CUDA C++, so the kernels use it as __host__ __device__ code and the host test
 * (kernels/gpu_math_test.c, plain C) checks it against target/splat_math.h.
 *
 * Why not include target/splat_math.h in device code: its functions are plain `static inline`
 * C (no __device__), and that header belongs to the host trainer. This file mirrors its float
 * instance (the CPU backend's) operation for operation, including where that instance rounds
 * through double (sqrt, exp and ceil of the C library promote float arguments), so both
 * backends share every convention of target/backend.h. The one systematic difference on the
 * device is nvcc's fused multiply-add contraction, a last-bit effect. */
#ifndef GPU_MATH_CUH
#define GPU_MATH_CUH

#include "backend.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define GPU_FN static __host__ __device__ __forceinline__
#else
#define GPU_FN static inline
#endif

/* The projected Gaussian: what the blend needs and what binning needs. */
struct gpu_proj {
	float u, v, depth;        /* pixel position of the mean, camera-space z */
	float conic[3];           /* (A, B, C): power = -½(A dx² + C dy²) - B dx dy */
	float radius;             /* pixels; 0 = invisible */
	int rect[4];              /* tiles x0, y0, x1, y1 (half open) */
};

/* Rotation matrix (row-major) of a normalised quaternion (w, x, y, z). */
GPU_FN void gpu_quat_to_matrix(const float q[4], float r[9])
{
	float w = q[0], x = q[1], y = q[2], z = q[3];

	r[0] = 1 - 2 * (y * y + z * z); r[1] = 2 * (x * y - w * z);     r[2] = 2 * (x * z + w * y);
	r[3] = 2 * (x * y + w * z);     r[4] = 1 - 2 * (x * x + z * z); r[5] = 2 * (y * z - w * x);
	r[6] = 2 * (x * z - w * y);     r[7] = 2 * (y * z + w * x);     r[8] = 1 - 2 * (x * x + y * y);
}

/* t = R·μ + translation. */
GPU_FN void gpu_to_camera(const float mean[3], const struct splat_camera *cam, float t[3])
{
	for (int i = 0; i < 3; i++)
		t[i] = cam->rotation[3 * i] * mean[0] + cam->rotation[3 * i + 1] * mean[1] +
		       cam->rotation[3 * i + 2] * mean[2] + cam->translation[i];
}

/* Σ = M Mᵀ with M = R(q̂) diag(exp(log_scale)); also R, the scales, q̂ and |q|. */
GPU_FN void gpu_covariance3d(const float log_scale[3], const float quat[4], float cov[9], float rot[9],
			     float scale[3], float qn[4], float *qnorm)
{
	/* sqrtf is correctly rounded, so it equals the CPU's (float)sqrt((double)x). */
	float n = sqrtf(quat[0] * quat[0] + quat[1] * quat[1] + quat[2] * quat[2] + quat[3] * quat[3]);
	float m[9];

	if (n < (float)1e-12)
		n = (float)1e-12;
	for (int i = 0; i < 4; i++)
		qn[i] = quat[i] / n;
	*qnorm = n;
	gpu_quat_to_matrix(qn, rot);
	for (int j = 0; j < 3; j++)
		scale[j] = (float)exp((double)log_scale[j]);   /* the CPU's exp() of a float */
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			m[3 * i + j] = rot[3 * i + j] * scale[j];
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			cov[3 * i + j] = m[3 * i] * m[3 * j] + m[3 * i + 1] * m[3 * j + 1] + m[3 * i + 2] * m[3 * j + 2];
}

/* T = J·W (2×3); the ratios t_x/t_z, t_y/t_z clamped to ±1.3·tan(fov/2) for J only. */
GPU_FN void gpu_jacobian_w(const float t[3], const struct splat_camera *cam, float tw[6], float *rx, float *ry,
			   int *clamped_x, int *clamped_y)
{
	float limx = (float)SPLAT_JACOBIAN_CLAMP * cam->tan_half_fov_x;
	float limy = (float)SPLAT_JACOBIAN_CLAMP * cam->tan_half_fov_y;
	float x = t[0] / t[2], y = t[1] / t[2];
	float fx = cam->fx, fy = cam->fy, tz = t[2];

	*clamped_x = x < -limx || x > limx;
	*clamped_y = y < -limy || y > limy;
	*rx = x < -limx ? -limx : x > limx ? limx : x;
	*ry = y < -limy ? -limy : y > limy ? limy : y;
	float j00 = fx / tz, j02 = -fx * *rx / tz, j11 = fy / tz, j12 = -fy * *ry / tz;
	const float *w = cam->rotation;
	for (int k = 0; k < 3; k++) {
		tw[k] = j00 * w[k] + j02 * w[6 + k];
		tw[3 + k] = j11 * w[3 + k] + j12 * w[6 + k];
	}
}

/* Σ' = T Σ Tᵀ + 0.3 I as (a, b, c); tmp receives T Σ for the backward pass. */
GPU_FN void gpu_cov2d(const float tw[6], const float cov[9], float *a, float *b, float *c)
{
	float tmp[6];

	for (int r = 0; r < 2; r++)
		for (int k = 0; k < 3; k++)
			tmp[3 * r + k] = tw[3 * r] * cov[k] + tw[3 * r + 1] * cov[3 + k] + tw[3 * r + 2] * cov[6 + k];
	*a = tmp[0] * tw[0] + tmp[1] * tw[1] + tmp[2] * tw[2] + (float)SPLAT_LOWPASS;
	*b = tmp[0] * tw[3] + tmp[1] * tw[4] + tmp[2] * tw[5];
	*c = tmp[3] * tw[3] + tmp[4] * tw[4] + tmp[5] * tw[5] + (float)SPLAT_LOWPASS;
}

/* Project one Gaussian for a view of tiles_x × tiles_y tiles. Returns 1 when visible (out
 * filled), 0 otherwise (out->radius = 0). */
GPU_FN int gpu_project(const float mean[3], const float log_scale[3], const float quat[4],
		       const struct splat_camera *cam, struct gpu_proj *out)
{
	float t[3], cov[9], rot[9], scale[3], qn[4], qnorm, tw[6], rx, ry, a, b, c;
	int cx, cy;

	out->radius = 0;
	gpu_to_camera(mean, cam, t);
	if (t[2] <= (float)SPLAT_NEAR_Z)
		return 0;
	gpu_covariance3d(log_scale, quat, cov, rot, scale, qn, &qnorm);
	gpu_jacobian_w(t, cam, tw, &rx, &ry, &cx, &cy);
	gpu_cov2d(tw, cov, &a, &b, &c);
	float det = a * c - b * b;
	if (!(det > 0))
		return 0;
	out->conic[0] = c / det;
	out->conic[1] = -b / det;
	out->conic[2] = a / det;
	float mid = 0.5f * (a + c);
	float disc = mid * mid - det;
	/* The CPU computes mid + sqrt(...) and 3·sqrt(λ) in double (C promotion): so do we. */
	float lambda = (float)((double)mid + sqrt((double)(disc > 0.1f ? disc : 0.1f)));
	out->radius = (float)ceil(3.0 * sqrt((double)lambda));
	out->u = cam->fx * t[0] / t[2] + cam->cx;
	out->v = cam->fy * t[1] / t[2] + cam->cy;
	out->depth = t[2];

	int tiles_x = (cam->width + SPLAT_TILE - 1) / SPLAT_TILE;
	int tiles_y = (cam->height + SPLAT_TILE - 1) / SPLAT_TILE;
	float r = out->radius;
	/* (u + r + 16 - 1) / 16 in this association, as the CPU evaluates it. */
	float fx0 = floorf((out->u - r) / SPLAT_TILE), fx1 = floorf((out->u + r + SPLAT_TILE - 1) / SPLAT_TILE);
	float fy0 = floorf((out->v - r) / SPLAT_TILE), fy1 = floorf((out->v + r + SPLAT_TILE - 1) / SPLAT_TILE);
	out->rect[0] = fx0 < 0 ? 0 : fx0 > tiles_x ? tiles_x : (int)fx0;
	out->rect[1] = fy0 < 0 ? 0 : fy0 > tiles_y ? tiles_y : (int)fy0;
	out->rect[2] = fx1 < 0 ? 0 : fx1 > tiles_x ? tiles_x : (int)fx1;
	out->rect[3] = fy1 < 0 ? 0 : fy1 > tiles_y ? tiles_y : (int)fy1;
	if (out->radius <= 0 || out->rect[2] <= out->rect[0] || out->rect[3] <= out->rect[1]) {
		out->radius = 0;
		return 0;
	}
	return 1;
}

/* Backward of gpu_project: ∂L/∂(u, v) and ∂L/∂conic (plain partials, B counted once) to
 * ∂L/∂mean, ∂L/∂log_scale, ∂L/∂quat, added to the outputs. Recomputes the forward values. */
GPU_FN void gpu_project_backward(const float mean[3], const float log_scale[3], const float quat[4],
				 const struct splat_camera *cam, float d_u, float d_v, const float d_conic[3],
				 float d_mean[3], float d_log_scale[3], float d_quat[4])
{
	float t[3], cov[9], rot[9], scale[3], qn[4], qnorm, tw[6], rx, ry, a, b, c;
	int clx, cly;

	gpu_to_camera(mean, cam, t);
	gpu_covariance3d(log_scale, quat, cov, rot, scale, qn, &qnorm);
	gpu_jacobian_w(t, cam, tw, &rx, &ry, &clx, &cly);
	gpu_cov2d(tw, cov, &a, &b, &c);
	float det = a * c - b * b, det2 = det * det;

	/* conic (A, B, C) = (c, -b, a)/det → (a, b, c) of Σ'. */
	float dA = d_conic[0], dB = d_conic[1], dC = d_conic[2];
	float da = (dA * (-c * c) + dB * (b * c) + dC * (-b * b)) / det2;
	float db = (dA * (2 * b * c) - dB * (a * c + b * b) + dC * (2 * a * b)) / det2;
	float dc = (dA * (-b * b) + dB * (a * b) + dC * (-a * a)) / det2;

	/* Σ' = T Σ Tᵀ: with G = [[da, db/2], [db/2, dc]] (the off-diagonal b appears twice in Σ'),
	 * dΣ = Tᵀ G T and dT = 2 G T Σ. */
	float g[4] = { da, db / 2, db / 2, dc };
	float gt[6], dcov[9], dtw[6];
	for (int r = 0; r < 2; r++)
		for (int k = 0; k < 3; k++)
			gt[3 * r + k] = g[2 * r] * tw[k] + g[2 * r + 1] * tw[3 + k];
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			dcov[3 * i + j] = tw[i] * gt[j] + tw[3 + i] * gt[3 + j];
	for (int r = 0; r < 2; r++)
		for (int k = 0; k < 3; k++)
			dtw[3 * r + k] = 2 * (gt[3 * r] * cov[k] + gt[3 * r + 1] * cov[3 + k] + gt[3 * r + 2] * cov[6 + k]);

	/* T = J W → dJ = dT Wᵀ; only J00, J02, J11, J12 are non-zero. */
	const float *w = cam->rotation;
	float dj00 = 0, dj02 = 0, dj11 = 0, dj12 = 0;
	for (int k = 0; k < 3; k++) {
		dj00 += dtw[k] * w[k];
		dj02 += dtw[k] * w[6 + k];
		dj11 += dtw[3 + k] * w[3 + k];
		dj12 += dtw[3 + k] * w[6 + k];
	}
	float fx = cam->fx, fy = cam->fy, tz = t[2], tz2 = tz * tz;
	float dt[3] = { 0, 0, 0 };
	dt[2] += -dj00 * fx / tz2 - dj11 * fy / tz2 + dj02 * fx * rx / tz2 + dj12 * fy * ry / tz2;
	float drx = -dj02 * fx / tz, dry = -dj12 * fy / tz;
	if (!clx) {   /* a clamped ratio is a constant: no gradient through it */
		dt[0] += drx / tz;
		dt[2] -= drx * t[0] / tz2;
	}
	if (!cly) {
		dt[1] += dry / tz;
		dt[2] -= dry * t[1] / tz2;
	}
	/* u = fx tx/tz + cx, v = fy ty/tz + cy. */
	dt[0] += d_u * fx / tz;
	dt[1] += d_v * fy / tz;
	dt[2] -= (d_u * fx * t[0] + d_v * fy * t[1]) / tz2;
	for (int k = 0; k < 3; k++)
		d_mean[k] += w[k] * dt[0] + w[3 + k] * dt[1] + w[6 + k] * dt[2];

	/* Σ = M Mᵀ, M = R diag(s): dM = 2 dΣ M (dΣ symmetric). */
	float m[9], dm[9], dr[9];
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			m[3 * i + j] = rot[3 * i + j] * scale[j];
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			dm[3 * i + j] = 2 * (dcov[3 * i] * m[j] + dcov[3 * i + 1] * m[3 + j] + dcov[3 * i + 2] * m[6 + j]);
	for (int j = 0; j < 3; j++) {
		float ds = dm[j] * rot[j] + dm[3 + j] * rot[3 + j] + dm[6 + j] * rot[6 + j];
		d_log_scale[j] += ds * scale[j];
	}
	for (int i = 0; i < 9; i++)
		dr[i] = dm[i] * scale[i % 3];

	/* R(q̂) → q̂. */
	float qw = qn[0], qx = qn[1], qy = qn[2], qz = qn[3], dq[4];
	dq[0] = 2 * (-qz * dr[1] + qy * dr[2] + qz * dr[3] - qx * dr[5] - qy * dr[6] + qx * dr[7]);
	dq[1] = 2 * (qy * dr[1] + qz * dr[2] + qy * dr[3] - 2 * qx * dr[4] - qw * dr[5] + qz * dr[6] +
		     qw * dr[7] - 2 * qx * dr[8]);
	dq[2] = 2 * (-2 * qy * dr[0] + qx * dr[1] + qw * dr[2] + qx * dr[3] + qz * dr[5] - qw * dr[6] +
		     qz * dr[7] - 2 * qy * dr[8]);
	dq[3] = 2 * (-2 * qz * dr[0] - qw * dr[1] + qx * dr[2] + qw * dr[3] - 2 * qz * dr[4] + qy * dr[5] +
		     qx * dr[6] + qy * dr[7]);
	/* q̂ = q/|q|: ∂q = (∂q̂ - q̂(q̂·∂q̂))/|q|. */
	float dot = qn[0] * dq[0] + qn[1] * dq[1] + qn[2] * dq[2] + qn[3] * dq[3];
	for (int i = 0; i < 4; i++)
		d_quat[i] += (dq[i] - qn[i] * dot) / qnorm;
}

/* SH constants (splat-pipeline.md §3), as the float instance rounds them. */
#define GPU_SH_C0   ((float)0.28209479177387814)
#define GPU_SH_C1   ((float)0.4886025119029199)
#define GPU_SH_C2_0 ((float)1.0925484305920792)
#define GPU_SH_C2_1 ((float)-1.0925484305920792)
#define GPU_SH_C2_2 ((float)0.31539156525252005)
#define GPU_SH_C2_3 ((float)-1.0925484305920792)
#define GPU_SH_C2_4 ((float)0.5462742152960396)
#define GPU_SH_C3_0 ((float)-0.5900435899266435)
#define GPU_SH_C3_1 ((float)2.890611442640554)
#define GPU_SH_C3_2 ((float)-0.4570457994644658)
#define GPU_SH_C3_3 ((float)0.3731763325901154)
#define GPU_SH_C3_4 ((float)-0.4570457994644658)
#define GPU_SH_C3_5 ((float)1.445305721320277)
#define GPU_SH_C3_6 ((float)-0.5900435899266435)

/* SH basis b[16] at the unit direction (x, y, z) for bands 0..degree (the rest 0), and, when
 * db is not NULL, the partial derivatives db[3k + axis]. */
GPU_FN void gpu_sh_basis(float x, float y, float z, int degree, float b[16], float *db)
{
	float xx = x * x, yy = y * y, zz = z * z;

	for (int k = 0; k < 16; k++)
		b[k] = 0;
	if (db)
		for (int k = 0; k < 48; k++)
			db[k] = 0;
	b[0] = GPU_SH_C0;
	if (degree < 1)
		return;
	b[1] = -GPU_SH_C1 * y;
	b[2] = GPU_SH_C1 * z;
	b[3] = -GPU_SH_C1 * x;
	if (db) {
		db[3 * 1 + 1] = -GPU_SH_C1;
		db[3 * 2 + 2] = GPU_SH_C1;
		db[3 * 3 + 0] = -GPU_SH_C1;
	}
	if (degree < 2)
		return;
	b[4] = GPU_SH_C2_0 * x * y;
	b[5] = GPU_SH_C2_1 * y * z;
	b[6] = GPU_SH_C2_2 * (2 * zz - xx - yy);
	b[7] = GPU_SH_C2_3 * x * z;
	b[8] = GPU_SH_C2_4 * (xx - yy);
	if (db) {
		db[12] = GPU_SH_C2_0 * y; db[13] = GPU_SH_C2_0 * x;
		db[16] = GPU_SH_C2_1 * z; db[17] = GPU_SH_C2_1 * y;
		db[18] = -2 * GPU_SH_C2_2 * x; db[19] = -2 * GPU_SH_C2_2 * y; db[20] = 4 * GPU_SH_C2_2 * z;
		db[21] = GPU_SH_C2_3 * z; db[23] = GPU_SH_C2_3 * x;
		db[24] = 2 * GPU_SH_C2_4 * x; db[25] = -2 * GPU_SH_C2_4 * y;
	}
	if (degree < 3)
		return;
	b[9] = GPU_SH_C3_0 * y * (3 * xx - yy);
	b[10] = GPU_SH_C3_1 * x * y * z;
	b[11] = GPU_SH_C3_2 * y * (4 * zz - xx - yy);
	b[12] = GPU_SH_C3_3 * z * (2 * zz - 3 * xx - 3 * yy);
	b[13] = GPU_SH_C3_4 * x * (4 * zz - xx - yy);
	b[14] = GPU_SH_C3_5 * z * (xx - yy);
	b[15] = GPU_SH_C3_6 * x * (xx - 3 * yy);
	if (db) {
		db[27] = GPU_SH_C3_0 * 6 * x * y; db[28] = GPU_SH_C3_0 * (3 * xx - 3 * yy);
		db[30] = GPU_SH_C3_1 * y * z; db[31] = GPU_SH_C3_1 * x * z; db[32] = GPU_SH_C3_1 * x * y;
		db[33] = GPU_SH_C3_2 * (-2 * x * y); db[34] = GPU_SH_C3_2 * (4 * zz - xx - 3 * yy);
		db[35] = GPU_SH_C3_2 * 8 * y * z;
		db[36] = GPU_SH_C3_3 * (-6 * x * z); db[37] = GPU_SH_C3_3 * (-6 * y * z);
		db[38] = GPU_SH_C3_3 * (6 * zz - 3 * xx - 3 * yy);
		db[39] = GPU_SH_C3_4 * (4 * zz - 3 * xx - yy); db[40] = GPU_SH_C3_4 * (-2 * x * y);
		db[41] = GPU_SH_C3_4 * 8 * x * z;
		db[42] = GPU_SH_C3_5 * 2 * x * z; db[43] = GPU_SH_C3_5 * (-2 * y * z);
		db[44] = GPU_SH_C3_5 * (xx - yy);
		db[45] = GPU_SH_C3_6 * (3 * xx - 3 * yy); db[46] = GPU_SH_C3_6 * (-6 * x * y);
	}
}

/* Unit view direction d = normalize(μ - camera centre) and |μ - centre|. */
GPU_FN float gpu_view_dir(const float mean[3], const struct splat_camera *cam, float u[3])
{
	float d[3];

	for (int k = 0; k < 3; k++)
		d[k] = mean[k] - cam->centre[k];
	float n = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
	if (n < (float)1e-12)
		n = (float)1e-12;
	for (int k = 0; k < 3; k++)
		u[k] = d[k] / n;
	return n;
}

/* rgb = max(Σ_k b_k sh_k + 0.5, 0) for bands 0..degree; clamped[c] set where the clamp acts.
 * sh points at the Gaussian's 48 coefficients ((k*3) + c). */
GPU_FN void gpu_sh_color(const float mean[3], const float *sh, int degree, const struct splat_camera *cam,
			 float rgb[3], unsigned char clamped[3])
{
	float u[3], b[16];

	gpu_view_dir(mean, cam, u);
	gpu_sh_basis(u[0], u[1], u[2], degree, b, NULL);
	int nk = (degree + 1) * (degree + 1);
	for (int c = 0; c < 3; c++) {
		float s = 0.5f;
		for (int k = 0; k < nk; k++)
			s += b[k] * sh[3 * k + c];
		clamped[c] = s < 0;
		rgb[c] = s < 0 ? 0 : s;
	}
}

/* Backward of gpu_sh_color: ∂L/∂rgb → ∂L/∂sh (all 48 written; inactive bands get 0) and
 * ∂L/∂mean through the view direction (added). */
GPU_FN void gpu_sh_color_backward(const float mean[3], const float *sh, int degree, const struct splat_camera *cam,
				  const float d_rgb_in[3], const unsigned char clamped[3], float *d_sh,
				  float d_mean[3])
{
	float u[3], b[16], db[48], d_rgb[3], dd[3] = { 0, 0, 0 };
	float n = gpu_view_dir(mean, cam, u);

	gpu_sh_basis(u[0], u[1], u[2], degree, b, db);
	for (int c = 0; c < 3; c++)
		d_rgb[c] = clamped[c] ? 0 : d_rgb_in[c];
	for (int k = 0; k < 16; k++) {
		float g = 0;
		for (int c = 0; c < 3; c++) {
			d_sh[3 * k + c] = b[k] * d_rgb[c];
			g += sh[3 * k + c] * d_rgb[c];
		}
		for (int a = 0; a < 3; a++)
			dd[a] += db[3 * k + a] * g;
	}
	/* u = d/|d|: ∂d = (∂u - u(u·∂u))/|d|. */
	float dot = u[0] * dd[0] + u[1] * dd[1] + u[2] * dd[2];
	for (int a = 0; a < 3; a++)
		d_mean[a] += (dd[a] - u[a] * dot) / n;
}

/* o = sigmoid(logit), as the CPU backend computes it. */
GPU_FN float gpu_sigmoid(float logit)
{
	return 1.0f / (1.0f + expf(-logit));
}

/* α of a projected Gaussian (u, v, conic A B C, opacity o) at the pixel centre (px, py);
 * 0 when skipped (power > 0 or α < 1/255); α capped at 0.99. power, dx = u - px, dy = v - py
 * out for the backward pass. */
GPU_FN float gpu_alpha(float u, float v, float A, float B, float C, float o, float px, float py, float *power,
		       float *dx, float *dy)
{
	*dx = u - px;
	*dy = v - py;
	*power = -0.5f * (A * *dx * *dx + C * *dy * *dy) - B * *dx * *dy;
	/* o <= 1, so below ln(1/255) = -5.54 the α test fails anyway: the CPU backend's exact
	 * early-out, which also spares most pixel/Gaussian pairs of a tile the expf */
	if (*power > 0 || *power < -5.6f)
		return 0;
	float alpha = o * expf(*power);
	if (alpha > (float)SPLAT_ALPHA_MAX)
		alpha = (float)SPLAT_ALPHA_MAX;
	return alpha < (float)SPLAT_ALPHA_MIN ? 0 : alpha;
}

/* The blend-gradient indices of one Gaussian (9 floats per Gaussian in the 2-D gradient
 * buffer). */
enum { GPU_G2_U, GPU_G2_V, GPU_G2_A, GPU_G2_B, GPU_G2_C, GPU_G2_OPACITY, GPU_G2_R, GPU_G2_G, GPU_G2_BL, GPU_G2_N };

/* One step of the back-to-front blend backward at one pixel, for a Gaussian with α != 0:
 * T (the transmittance after it, on entry) becomes the transmittance before it, accum (the
 * colour behind it) takes it in, and out[9] receives its contribution to the 2-D gradients
 * (u, v, A, B, C, opacity, r, g, b). tf is the pixel's final transmittance, gpix ∂L/∂pixel,
 * bg_dot = background·gpix. */
GPU_FN void gpu_blend_backward_step(float alpha, float power, float dx, float dy, float A, float B, float C,
				    float o, const float rgb[3], const float gpix[3], float tf, float bg_dot,
				    float *T, float accum[3], float out[GPU_G2_N])
{
	float d_alpha = 0;

	*T /= 1 - alpha;
	for (int ch = 0; ch < 3; ch++) {
		d_alpha += (rgb[ch] - accum[ch]) * gpix[ch];
		out[GPU_G2_R + ch] = alpha * *T * gpix[ch];
		accum[ch] = alpha * rgb[ch] + (1 - alpha) * accum[ch];
	}
	d_alpha = *T * d_alpha - tf / (1 - alpha) * bg_dot;
	float gauss = expf(power);
	for (int k = 0; k <= GPU_G2_OPACITY; k++)
		out[k] = 0;
	if (o * gauss > (float)SPLAT_ALPHA_MAX)
		return;   /* α clamped to its maximum: no gradient to opacity or shape */
	out[GPU_G2_OPACITY] = gauss * d_alpha;
	float d_power = o * gauss * d_alpha;
	out[GPU_G2_U] = -(d_power * (A * dx + B * dy));
	out[GPU_G2_V] = -(d_power * (C * dy + B * dx));
	out[GPU_G2_A] = -(d_power * 0.5f * dx * dx);
	out[GPU_G2_B] = -(d_power * dx * dy);
	out[GPU_G2_C] = -(d_power * 0.5f * dy * dy);
}

/* The normalised 1-D SSIM window (11 taps, σ 1.5), computed in double and rounded. */
GPU_FN void gpu_ssim_window(float g[SPLAT_SSIM_WINDOW])
{
	double w[SPLAT_SSIM_WINDOW], sum = 0;
	int half = SPLAT_SSIM_WINDOW / 2;

	for (int k = 0; k < SPLAT_SSIM_WINDOW; k++) {
		w[k] = exp(-(double)((k - half) * (k - half)) / (2.0 * SPLAT_SSIM_SIGMA * SPLAT_SSIM_SIGMA));
		sum += w[k];
	}
	for (int k = 0; k < SPLAT_SSIM_WINDOW; k++)
		g[k] = (float)(w[k] / sum);
}

/* SSIM at one pixel from its window moments, and ∂S/∂m_x, ∂S/∂m_xx, ∂S/∂m_xy. */
GPU_FN float gpu_ssim_pixel(float mx, float my, float mxx, float myy, float mxy, float *ds_mx, float *ds_mxx,
			    float *ds_mxy)
{
	float c1 = (float)SPLAT_SSIM_C1, c2 = (float)SPLAT_SSIM_C2;
	float a1 = 2 * mx * my + c1, a2 = 2 * (mxy - mx * my) + c2;
	float b1 = mx * mx + my * my + c1, b2 = mxx - mx * mx + myy - my * my + c2;
	float s = a1 * a2 / (b1 * b2);

	*ds_mx = s * (2 * my / a1 - 2 * my / a2 - 2 * mx / b1 + 2 * mx / b2);
	*ds_mxx = -s / b2;
	*ds_mxy = 2 * s / a2;
	return s;
}

/* The bias corrections 1 - β^step, rounded to float as the CPU backend does. */
GPU_FN void gpu_adam_bias(int step, float *bc1, float *bc2)
{
	*bc1 = (float)(1 - pow(SPLAT_ADAM_BETA1, step));
	*bc2 = (float)(1 - pow(SPLAT_ADAM_BETA2, step));
}

/* One Adam update of parameter p with gradient g and moments m, v. */
GPU_FN void gpu_adam_update(float *p, float *m, float *v, float g, float lr, float bc1, float bc2)
{
	const float b1 = (float)SPLAT_ADAM_BETA1, b2 = (float)SPLAT_ADAM_BETA2, eps = (float)SPLAT_ADAM_EPS;

	*m = b1 * *m + (1 - b1) * g;
	*v = b2 * *v + (1 - b2) * g * g;
	*p -= lr * (*m / bc1) / (sqrtf(*v / bc2) + eps);
}

/* Sort key of a (tile, depth) pair: depth > SPLAT_NEAR_Z > 0, so its float bits order as an
 * unsigned integer. */
GPU_FN uint64_t gpu_sort_key(uint32_t tile, float depth)
{
	uint32_t bits;

	memcpy(&bits, &depth, sizeof(bits));
	return (uint64_t)tile << 32 | bits;
}

/* Bits the tile index needs: the radix sort covers key bits [0, 32 + this). */
GPU_FN int gpu_tile_bits(uint32_t tiles)
{
	int bits = 0;

	while (bits < 32 && ((uint64_t)1 << bits) < tiles)
		bits++;
	return bits;
}

#endif
