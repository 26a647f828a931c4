/* ad_rpfs_features.c: what ROMIO's generic code may rely on. */
#include "ad_rpfs.h"

int ADIOI_RPFS_Feature(ADIO_File fd, int flag)
{
	switch (flag) {
	case ADIO_SCALABLE_OPEN:   /* one rank looks up, broadcasts */
	case ADIO_SCALABLE_RESIZE: /* one rank truncates, broadcasts */
	case ADIO_LOCKS:	   /* byte-range locks on the metadata server */
	case ADIO_SHARED_FP: /* ROMIO's hidden-file pointer, guarded by those locks */
	case ADIO_ATOMIC_MODE:
	case ADIO_TWO_PHASE:	       /* collective I/O is ROMIO's generic two-phase */
	case ADIO_IMMEDIATELY_VISIBLE: /* no client cache: a write is seen at once */
		return 1;
	case ADIO_DATA_SIEVING_WRITES: /* list I/O writes only the bytes asked for */
	case ADIO_UNLINK_AFTER_CLOSE:  /* a remove drops the datafiles at once */
	default:
		return 0;
	}
}
