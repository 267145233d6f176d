/* cmd_diff.c: `csampler diff BEFORE AFTER`, a differential flame graph drawn on AFTER's shape,
 * red where a frame's share of the samples grew and blue where it shrank. The engine is in
 * flamegraph/ (flame.h). */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "../flamegraph/flame.h"

#include <stdlib.h>

int cmd_diff(int argc, char **argv)
{
	struct flame_opts o;
	int err = flame_opts_parse(&o, argc, argv, FLAME_MODE_DIFF);
	if (err)
		return err > 0 ? 0 : CS_EXIT_ERROR;
	int status = flame_run(&o, FLAME_MODE_DIFF);
	free(o.inputs);
	return status;
}
