/*-------------------------------------------------------------------------
 *
 * shj.c
 *	  The static symmetric hash join node (placeholder: under construction).
 *
 *-------------------------------------------------------------------------
 */
#include "eddy.h"

void
EddyShjInit(void)
{
}
