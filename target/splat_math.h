/* splat_math.h: the per-Gaussian math of the pipeline (projection, SH colour, their backward
 * passes) and the SSIM building blocks, written once and instantiated twice: in double for the
 * reference (reference.c) and in float for the CPU backend (cpu_backend.c). The finite
 * difference tests prove the double instance; the float instance differs only in precision.
 * Binning, sorting, blending and the loss loops are per backend.
 *
 * Include after defining SM_REAL (the scalar type) and SM(name) (the suffixing macro), e.g.
 *   #define SM_REAL double
 *   #define SM(name) name##_d
 *   #include "splat_math.h"
 * Formulas: ../shared/reference/splat-pipeline.md; conventions: backend.h. */
#include "backend.h"

#include <math.h>

/* What the blend needs of one projected Gaussian, plus what the backward pass reuses. */
struct SM(proj) {
	SM_REAL u, v, depth;          /* pixel position of the mean, camera-space z */
	SM_REAL conic[3];             /* (A, B, C) */
	SM_REAL radius;               /* pixels; 0 = invisible */
	SM_REAL extent;               /* 3·sqrt(λ_max) before rounding up to the radius */
	int rect[4];                  /* tiles x0, y0, x1, y1 (half open) */
};

/* Rotation matrix (row-major) of the normalised quaternion (w, x, y, z). */
static inline void SM(quat_to_matrix)(const SM_REAL q[4], SM_REAL r[9])
{
	SM_REAL w = q[0], x = q[1], y = q[2], z = q[3];

	r[0] = 1 - 2 * (y * y + z * z); r[1] = 2 * (x * y - w * z);     r[2] = 2 * (x * z + w * y);
	r[3] = 2 * (x * y + w * z);     r[4] = 1 - 2 * (x * x + z * z); r[5] = 2 * (y * z - w * x);
	r[6] = 2 * (x * z - w * y);     r[7] = 2 * (y * z + w * x);     r[8] = 1 - 2 * (x * x + y * y);
}

/* Camera-space position t and the clamped Jacobian ratios. */
static inline void SM(to_camera)(const SM_REAL mean[3], const struct splat_camera *cam, SM_REAL t[3])
{
	for (int i = 0; i < 3; i++)
		t[i] = (SM_REAL)cam->rotation[3 * i] * mean[0] + (SM_REAL)cam->rotation[3 * i + 1] * mean[1] +
		       (SM_REAL)cam->rotation[3 * i + 2] * mean[2] + (SM_REAL)cam->translation[i];
}

/* Σ = R diag(s²) Rᵀ (as M Mᵀ with M = R diag(s)); also returns R, s and the quaternion norm. */
static inline void SM(covariance3d)(const SM_REAL log_scale[3], const SM_REAL quat[4], SM_REAL cov[9],
				    SM_REAL rot[9], SM_REAL scale[3], SM_REAL qn[4], SM_REAL *qnorm)
{
	SM_REAL n = sqrt(quat[0] * quat[0] + quat[1] * quat[1] + quat[2] * quat[2] + quat[3] * quat[3]);
	SM_REAL m[9];

	if (n < (SM_REAL)1e-12)
		n = (SM_REAL)1e-12;
	for (int i = 0; i < 4; i++)
		qn[i] = quat[i] / n;
	*qnorm = n;
	SM(quat_to_matrix)(qn, rot);
	for (int j = 0; j < 3; j++)
		scale[j] = exp(log_scale[j]);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			m[3 * i + j] = rot[3 * i + j] * scale[j];
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			cov[3 * i + j] = m[3 * i] * m[3 * j] + m[3 * i + 1] * m[3 * j + 1] + m[3 * i + 2] * m[3 * j + 2];
}

/* T = J·W (2×3) for camera-space t; ratios clamped to ±1.3·tan(fov/2), clamped flags out. */
static inline void SM(jacobian_w)(const SM_REAL t[3], const struct splat_camera *cam, SM_REAL tw[6],
				  SM_REAL *rx, SM_REAL *ry, int *clamped_x, int *clamped_y)
{
	SM_REAL limx = (SM_REAL)SPLAT_JACOBIAN_CLAMP * cam->tan_half_fov_x;
	SM_REAL limy = (SM_REAL)SPLAT_JACOBIAN_CLAMP * cam->tan_half_fov_y;
	SM_REAL x = t[0] / t[2], y = t[1] / t[2];
	SM_REAL fx = cam->fx, fy = cam->fy, tz = t[2];

	*clamped_x = x < -limx || x > limx;
	*clamped_y = y < -limy || y > limy;
	*rx = x < -limx ? -limx : x > limx ? limx : x;
	*ry = y < -limy ? -limy : y > limy ? limy : y;
	SM_REAL j00 = fx / tz, j02 = -fx * *rx / tz, j11 = fy / tz, j12 = -fy * *ry / tz;
	const float *w = cam->rotation;
	for (int k = 0; k < 3; k++) {
		tw[k] = j00 * (SM_REAL)w[k] + j02 * (SM_REAL)w[6 + k];
		tw[3 + k] = j11 * (SM_REAL)w[3 + k] + j12 * (SM_REAL)w[6 + k];
	}
}

/* The screen-space covariance Σ' = T·Σ·Tᵀ + lowpass·I = [[a, b], [b, c]] of T = J·W (tw) and the
 * 3D covariance. */
static inline void SM(cov2d)(const SM_REAL tw[6], const SM_REAL cov[9], SM_REAL *a, SM_REAL *b, SM_REAL *c)
{
	SM_REAL tmp[6];

	for (int r = 0; r < 2; r++)
		for (int k = 0; k < 3; k++)
			tmp[3 * r + k] = tw[3 * r] * cov[k] + tw[3 * r + 1] * cov[3 + k] + tw[3 * r + 2] * cov[6 + k];
	*a = tmp[0] * tw[0] + tmp[1] * tw[1] + tmp[2] * tw[2] + (SM_REAL)SPLAT_LOWPASS;
	*b = tmp[0] * tw[3] + tmp[1] * tw[4] + tmp[2] * tw[5];
	*c = tmp[3] * tw[3] + tmp[4] * tw[4] + tmp[5] * tw[5] + (SM_REAL)SPLAT_LOWPASS;
}

/* Project one Gaussian. Returns 1 when it is visible (out filled), 0 otherwise. */
static inline int SM(project)(const SM_REAL mean[3], const SM_REAL log_scale[3], const SM_REAL quat[4],
			      const struct splat_camera *cam, struct SM(proj) *out)
{
	SM_REAL t[3], cov[9], rot[9], scale[3], qn[4], qnorm, tw[6], rx, ry;
	int cx, cy;

	out->radius = 0;
	SM(to_camera)(mean, cam, t);
	if (t[2] <= (SM_REAL)SPLAT_NEAR_Z)
		return 0;
	SM(covariance3d)(log_scale, quat, cov, rot, scale, qn, &qnorm);
	SM(jacobian_w)(t, cam, tw, &rx, &ry, &cx, &cy);
	SM_REAL a, b, c;
	SM(cov2d)(tw, cov, &a, &b, &c);
	SM_REAL det = a * c - b * b;
	if (!(det > 0))
		return 0;
	out->conic[0] = c / det;
	out->conic[1] = -b / det;
	out->conic[2] = a / det;
	SM_REAL mid = (SM_REAL)0.5 * (a + c);
	SM_REAL disc = mid * mid - det;
	SM_REAL lambda = mid + sqrt(disc > (SM_REAL)0.1 ? disc : (SM_REAL)0.1);
	out->extent = 3 * sqrt(lambda);
	out->radius = ceil(out->extent);
	out->u = (SM_REAL)cam->fx * t[0] / t[2] + (SM_REAL)cam->cx;
	out->v = (SM_REAL)cam->fy * t[1] / t[2] + (SM_REAL)cam->cy;
	out->depth = t[2];

	int tiles_x = (cam->width + SPLAT_TILE - 1) / SPLAT_TILE;
	int tiles_y = (cam->height + SPLAT_TILE - 1) / SPLAT_TILE;
	SM_REAL r = out->radius;
	SM_REAL fx0 = floor((out->u - r) / SPLAT_TILE), fx1 = floor((out->u + r + SPLAT_TILE - 1) / SPLAT_TILE);
	SM_REAL fy0 = floor((out->v - r) / SPLAT_TILE), fy1 = floor((out->v + r + SPLAT_TILE - 1) / SPLAT_TILE);
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

/* Backward of project: from ∂L/∂(u, v) and ∂L/∂conic to ∂L/∂mean, ∂L/∂log_scale, ∂L/∂quat
 * (added to the outputs). Recomputes the forward intermediates. */
static inline void SM(project_backward)(const SM_REAL mean[3], const SM_REAL log_scale[3],
					const SM_REAL quat[4], const struct splat_camera *cam,
					SM_REAL d_u, SM_REAL d_v, const SM_REAL d_conic[3],
					SM_REAL d_mean[3], SM_REAL d_log_scale[3], SM_REAL d_quat[4])
{
	SM_REAL t[3], cov[9], rot[9], scale[3], qn[4], qnorm, tw[6], rx, ry;
	int clx, cly;

	SM(to_camera)(mean, cam, t);
	SM(covariance3d)(log_scale, quat, cov, rot, scale, qn, &qnorm);
	SM(jacobian_w)(t, cam, tw, &rx, &ry, &clx, &cly);
	SM_REAL a, b, c;
	SM(cov2d)(tw, cov, &a, &b, &c);
	SM_REAL det = a * c - b * b, det2 = det * det;

	/* conic (A, B, C) = (c, -b, a)/det → (a, b, c) of Σ'. */
	SM_REAL dA = d_conic[0], dB = d_conic[1], dC = d_conic[2];
	SM_REAL da = (dA * (-c * c) + dB * (b * c) + dC * (-b * b)) / det2;
	SM_REAL db = (dA * (2 * b * c) - dB * (a * c + b * b) + dC * (2 * a * b)) / det2;
	SM_REAL dc = (dA * (-b * b) + dB * (a * b) + dC * (-a * a)) / det2;

	/* Σ' = T Σ Tᵀ: with G = [[da, db/2], [db/2, dc]], dΣ = Tᵀ G T and dT = 2 G T Σ. */
	SM_REAL g[4] = { da, db / 2, db / 2, dc };
	SM_REAL gt[6], dcov[9], dtw[6];
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
	SM_REAL dj00 = 0, dj02 = 0, dj11 = 0, dj12 = 0;
	for (int k = 0; k < 3; k++) {
		dj00 += dtw[k] * (SM_REAL)w[k];
		dj02 += dtw[k] * (SM_REAL)w[6 + k];
		dj11 += dtw[3 + k] * (SM_REAL)w[3 + k];
		dj12 += dtw[3 + k] * (SM_REAL)w[6 + k];
	}
	SM_REAL fx = cam->fx, fy = cam->fy, tz = t[2], tz2 = tz * tz;
	SM_REAL dt[3] = { 0, 0, 0 };
	dt[2] += -dj00 * fx / tz2 - dj11 * fy / tz2 + dj02 * fx * rx / tz2 + dj12 * fy * ry / tz2;
	SM_REAL drx = -dj02 * fx / tz, dry = -dj12 * fy / tz;
	if (!clx) {
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
		d_mean[k] += (SM_REAL)w[k] * dt[0] + (SM_REAL)w[3 + k] * dt[1] + (SM_REAL)w[6 + k] * dt[2];

	/* Σ = M Mᵀ, M = R diag(s): dM = 2 dΣ M (dΣ symmetric). */
	SM_REAL m[9], dm[9], dr[9];
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			m[3 * i + j] = rot[3 * i + j] * scale[j];
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			dm[3 * i + j] = 2 * (dcov[3 * i] * m[j] + dcov[3 * i + 1] * m[3 + j] + dcov[3 * i + 2] * m[6 + j]);
	for (int j = 0; j < 3; j++) {
		SM_REAL ds = dm[j] * rot[j] + dm[3 + j] * rot[3 + j] + dm[6 + j] * rot[6 + j];
		d_log_scale[j] += ds * scale[j];
	}
	for (int i = 0; i < 9; i++)
		dr[i] = dm[i] * scale[i % 3];

	/* R(q̂) → q̂. */
	SM_REAL qw = qn[0], qx = qn[1], qy = qn[2], qz = qn[3], dq[4];
	dq[0] = 2 * (-qz * dr[1] + qy * dr[2] + qz * dr[3] - qx * dr[5] - qy * dr[6] + qx * dr[7]);
	dq[1] = 2 * (qy * dr[1] + qz * dr[2] + qy * dr[3] - 2 * qx * dr[4] - qw * dr[5] + qz * dr[6] +
		     qw * dr[7] - 2 * qx * dr[8]);
	dq[2] = 2 * (-2 * qy * dr[0] + qx * dr[1] + qw * dr[2] + qx * dr[3] + qz * dr[5] - qw * dr[6] +
		     qz * dr[7] - 2 * qy * dr[8]);
	dq[3] = 2 * (-2 * qz * dr[0] - qw * dr[1] + qx * dr[2] + qw * dr[3] - 2 * qz * dr[4] + qy * dr[5] +
		     qx * dr[6] + qy * dr[7]);
	/* q̂ = q/|q|: ∂q = (∂q̂ - q̂(q̂·∂q̂))/|q|. */
	SM_REAL dot = qn[0] * dq[0] + qn[1] * dq[1] + qn[2] * dq[2] + qn[3] * dq[3];
	for (int i = 0; i < 4; i++)
		d_quat[i] += (dq[i] - qn[i] * dot) / qnorm;
}

#define SM_C0 0.28209479177387814
#define SM_C1 0.4886025119029199

/* SH basis values b[16] at unit direction (x, y, z), and their partial derivatives (as
 * polynomials in x, y, z) when db is not NULL: db[3*k + axis]. */
static inline void SM(sh_basis)(SM_REAL x, SM_REAL y, SM_REAL z, int degree, SM_REAL b[16], SM_REAL *db)
{
	static const double c2[5] = { 1.0925484305920792, -1.0925484305920792, 0.31539156525252005,
				      -1.0925484305920792, 0.5462742152960396 };
	static const double c3[7] = { -0.5900435899266435, 2.890611442640554, -0.4570457994644658,
				      0.3731763325901154, -0.4570457994644658, 1.445305721320277,
				      -0.5900435899266435 };
	SM_REAL xx = x * x, yy = y * y, zz = z * z;

	for (int k = 0; k < 16; k++)
		b[k] = 0;
	if (db)
		for (int k = 0; k < 48; k++)
			db[k] = 0;
	b[0] = (SM_REAL)SM_C0;
	if (degree < 1)
		return;
	b[1] = -(SM_REAL)SM_C1 * y;
	b[2] = (SM_REAL)SM_C1 * z;
	b[3] = -(SM_REAL)SM_C1 * x;
	if (db) {
		db[3 * 1 + 1] = -(SM_REAL)SM_C1;
		db[3 * 2 + 2] = (SM_REAL)SM_C1;
		db[3 * 3 + 0] = -(SM_REAL)SM_C1;
	}
	if (degree < 2)
		return;
	b[4] = (SM_REAL)c2[0] * x * y;
	b[5] = (SM_REAL)c2[1] * y * z;
	b[6] = (SM_REAL)c2[2] * (2 * zz - xx - yy);
	b[7] = (SM_REAL)c2[3] * x * z;
	b[8] = (SM_REAL)c2[4] * (xx - yy);
	if (db) {
		db[12] = (SM_REAL)c2[0] * y; db[13] = (SM_REAL)c2[0] * x;
		db[16] = (SM_REAL)c2[1] * z; db[17] = (SM_REAL)c2[1] * y;
		db[18] = -2 * (SM_REAL)c2[2] * x; db[19] = -2 * (SM_REAL)c2[2] * y; db[20] = 4 * (SM_REAL)c2[2] * z;
		db[21] = (SM_REAL)c2[3] * z; db[23] = (SM_REAL)c2[3] * x;
		db[24] = 2 * (SM_REAL)c2[4] * x; db[25] = -2 * (SM_REAL)c2[4] * y;
	}
	if (degree < 3)
		return;
	b[9] = (SM_REAL)c3[0] * y * (3 * xx - yy);
	b[10] = (SM_REAL)c3[1] * x * y * z;
	b[11] = (SM_REAL)c3[2] * y * (4 * zz - xx - yy);
	b[12] = (SM_REAL)c3[3] * z * (2 * zz - 3 * xx - 3 * yy);
	b[13] = (SM_REAL)c3[4] * x * (4 * zz - xx - yy);
	b[14] = (SM_REAL)c3[5] * z * (xx - yy);
	b[15] = (SM_REAL)c3[6] * x * (xx - 3 * yy);
	if (db) {
		db[27] = (SM_REAL)c3[0] * 6 * x * y; db[28] = (SM_REAL)c3[0] * (3 * xx - 3 * yy);
		db[30] = (SM_REAL)c3[1] * y * z; db[31] = (SM_REAL)c3[1] * x * z; db[32] = (SM_REAL)c3[1] * x * y;
		db[33] = (SM_REAL)c3[2] * (-2 * x * y); db[34] = (SM_REAL)c3[2] * (4 * zz - xx - 3 * yy);
		db[35] = (SM_REAL)c3[2] * 8 * y * z;
		db[36] = (SM_REAL)c3[3] * (-6 * x * z); db[37] = (SM_REAL)c3[3] * (-6 * y * z);
		db[38] = (SM_REAL)c3[3] * (6 * zz - 3 * xx - 3 * yy);
		db[39] = (SM_REAL)c3[4] * (4 * zz - 3 * xx - yy); db[40] = (SM_REAL)c3[4] * (-2 * x * y);
		db[41] = (SM_REAL)c3[4] * 8 * x * z;
		db[42] = (SM_REAL)c3[5] * 2 * x * z; db[43] = (SM_REAL)c3[5] * (-2 * y * z);
		db[44] = (SM_REAL)c3[5] * (xx - yy);
		db[45] = (SM_REAL)c3[6] * (3 * xx - 3 * yy); db[46] = (SM_REAL)c3[6] * (-6 * x * y);
	}
}

/* rgb = max(Σ_k b_k sh_k + 0.5, 0); clamped[c] set where the clamp is active. */
static inline void SM(sh_color)(const SM_REAL mean[3], const SM_REAL *sh, int degree,
				const struct splat_camera *cam, SM_REAL rgb[3], unsigned char clamped[3])
{
	SM_REAL d[3], b[16];
	for (int k = 0; k < 3; k++)
		d[k] = mean[k] - (SM_REAL)cam->centre[k];
	SM_REAL n = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
	if (n < (SM_REAL)1e-12)
		n = (SM_REAL)1e-12;
	SM(sh_basis)(d[0] / n, d[1] / n, d[2] / n, degree, b, NULL);
	int nk = (degree + 1) * (degree + 1);
	for (int c = 0; c < 3; c++) {
		SM_REAL s = (SM_REAL)0.5;
		for (int k = 0; k < nk; k++)
			s += b[k] * sh[3 * k + c];
		clamped[c] = s < 0;
		rgb[c] = s < 0 ? 0 : s;
	}
}

/* Backward of sh_color: ∂L/∂rgb → ∂L/∂sh (written, 48 values) and ∂L/∂mean (added). */
static inline void SM(sh_color_backward)(const SM_REAL mean[3], const SM_REAL *sh, int degree,
					 const struct splat_camera *cam, const SM_REAL d_rgb_in[3],
					 const unsigned char clamped[3], SM_REAL *d_sh, SM_REAL d_mean[3])
{
	SM_REAL d[3], b[16], db[48], d_rgb[3], dd[3] = { 0, 0, 0 };
	for (int k = 0; k < 3; k++)
		d[k] = mean[k] - (SM_REAL)cam->centre[k];
	SM_REAL n = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
	if (n < (SM_REAL)1e-12)
		n = (SM_REAL)1e-12;
	SM_REAL u[3] = { d[0] / n, d[1] / n, d[2] / n };
	SM(sh_basis)(u[0], u[1], u[2], degree, b, db);
	for (int c = 0; c < 3; c++)
		d_rgb[c] = clamped[c] ? 0 : d_rgb_in[c];
	for (int k = 0; k < 16; k++) {
		SM_REAL g = 0;
		for (int c = 0; c < 3; c++) {
			d_sh[3 * k + c] = b[k] * d_rgb[c];
			g += sh[3 * k + c] * d_rgb[c];
		}
		for (int a = 0; a < 3; a++)
			dd[a] += db[3 * k + a] * g;
	}
	/* u = d/|d|: ∂d = (∂u - u(u·∂u))/|d|. */
	SM_REAL dot = u[0] * dd[0] + u[1] * dd[1] + u[2] * dd[2];
	for (int a = 0; a < 3; a++)
		d_mean[a] += (dd[a] - u[a] * dot) / n;
}

/* The normalised 1-D SSIM window (11 taps, σ 1.5); the 2-D window is its outer product. */
static inline void SM(ssim_window)(SM_REAL g[SPLAT_SSIM_WINDOW])
{
	double w[SPLAT_SSIM_WINDOW], sum = 0;
	int half = SPLAT_SSIM_WINDOW / 2;

	for (int k = 0; k < SPLAT_SSIM_WINDOW; k++) {
		w[k] = exp(-(double)((k - half) * (k - half)) / (2.0 * SPLAT_SSIM_SIGMA * SPLAT_SSIM_SIGMA));
		sum += w[k];
	}
	for (int k = 0; k < SPLAT_SSIM_WINDOW; k++)
		g[k] = (SM_REAL)(w[k] / sum);
}

/* Horizontal (dir 0) or vertical (dir 1) zero-padded window pass over rows [y0, y1) of one
 * w×h plane. */
static inline void SM(ssim_pass)(const SM_REAL *in, SM_REAL *out, int w, int h, int y0, int y1, int dir,
				 const SM_REAL g[SPLAT_SSIM_WINDOW])
{
	int half = SPLAT_SSIM_WINDOW / 2;

	for (int y = y0; y < y1; y++)
		for (int x = 0; x < w; x++) {
			SM_REAL s = 0;
			for (int k = -half; k <= half; k++) {
				int xx = dir ? x : x + k, yy = dir ? y + k : y;
				if (xx < 0 || xx >= w || yy < 0 || yy >= h)
					continue;
				s += g[k + half] * in[yy * w + xx];
			}
			out[y * w + x] = s;
		}
}

/* SSIM at one pixel from the window moments, and ∂S/∂m_x, ∂S/∂m_xx, ∂S/∂m_xy. */
static inline SM_REAL SM(ssim_pixel)(SM_REAL mx, SM_REAL my, SM_REAL mxx, SM_REAL myy, SM_REAL mxy,
				     SM_REAL *ds_mx, SM_REAL *ds_mxx, SM_REAL *ds_mxy)
{
	SM_REAL c1 = (SM_REAL)SPLAT_SSIM_C1, c2 = (SM_REAL)SPLAT_SSIM_C2;
	SM_REAL a1 = 2 * mx * my + c1, a2 = 2 * (mxy - mx * my) + c2;
	SM_REAL b1 = mx * mx + my * my + c1, b2 = mxx - mx * mx + myy - my * my + c2;
	SM_REAL s = a1 * a2 / (b1 * b2);

	*ds_mx = s * (2 * my / a1 - 2 * my / a2 - 2 * mx / b1 + 2 * mx / b2);
	*ds_mxx = -s / b2;
	*ds_mxy = 2 * s / a2;
	return s;
}
