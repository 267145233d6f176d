/* cmd_flame.c: `csampler flame`, an interactive flame graph (SVG) from csampler data files or
 * folded stacks; a drop-in for flamegraph.pl. The engine is in flamegraph/ (flame.h). */
#include "cmd/cmds.h"
#include "base/cs.h"
#include "../flamegraph/flame.h"

#include <stdlib.h>

int cmd_flame(int argc, char **argv)
{
	struct flame_opts o;
	int err = flame_opts_parse(&o, argc, argv, FLAME_MODE_FLAME);
	if (err)
		return err > 0 ? 0 : CS_EXIT_ERROR;
	int status = flame_run(&o, FLAME_MODE_FLAME);
	free(o.inputs);
	return status;
}
