/* fold_gpu.h: the GPU fold under fold_profile (fold.h): GPU activities on their launch stacks,
 * weighing nanoseconds; and the names of copy kinds that other views share. */
#ifndef CSAMPLER_FOLD_GPU_H
#define CSAMPLER_FOLD_GPU_H

#include "analysis/fold_frame.h"

/* Walk p's GPU activities as fold_profile's FOLD_GPU (fold.h) describes, each stack under a
 * first frame prefix when prefix is not NULL (FOLD_BOTH's "GPU"). Returns 0, the callback's
 * error, or -EINVAL for a bad filter. */
int fold_gpu_stacks(const struct profile *p, const struct fold_opts *opts, const char *prefix,
		    fold_fn fn, void *arg);

/* The name of memcpy activity a's copy kind (its detail) by its process' GPU vendor
 * (base/gpu_vendor.h): "HtoD", "DtoH", ..., "?" when the vendor has none. */
const char *fold_gpu_copy_kind(const struct profile *p, const struct profile_gpu_activity *a);

#endif
