/* ad_rpfs.c: the rpfs driver's ADIOI_Fns table, and nothing else.
 *
 * Generalized requests (ad_rpfs_aio.c) make the nonblocking slots truly
 * asynchronous, the nonblocking collective ones included; the strided
 * slots are list I/O (ad_rpfs_io_list.c); the lock slot serves ROMIO's
 * shared file pointer and atomic mode (ad_rpfs_lock.c).
 *
 * Each operation lives in its own file (ad_rpfs_<op>.c). Collective I/O is
 * each rank's list I/O when every rank's pieces are large, else ROMIO's
 * generic two-phase code (ad_rpfs_coll.c), whose file domains follow
 * fd->hints->striping_unit, which the driver sets to the file's stripe unit
 * at open: each aggregator's domain then starts on a stripe boundary. */
#include "ad_rpfs.h"

struct ADIOI_Fns_struct ADIO_RPFS_operations = {
	ADIOI_RPFS_Open,	     /* Open: rank 0 looks up, broadcasts */
	ADIOI_RPFS_OpenColl,	     /* OpenColl: one collective pass */
	ADIOI_RPFS_ReadContig,	     /* ReadContig: rpfs_pread */
	ADIOI_RPFS_WriteContig,	     /* WriteContig: rpfs_pwrite */
	ADIOI_RPFS_ReadStridedColl,  /* ReadStridedColl: list I/O or two-phase */
	ADIOI_RPFS_WriteStridedColl, /* WriteStridedColl: list I/O or two-phase */
	ADIOI_GEN_SeekIndividual,    /* SeekIndividual: view arithmetic */
	ADIOI_RPFS_Fcntl,	     /* Fcntl: size, preallocate, atomicity */
	ADIOI_RPFS_SetInfo,	     /* SetInfo: striping, rpfs_*, then ROMIO */
	ADIOI_RPFS_ReadStrided,	     /* ReadStrided: one rpfs_readv */
	ADIOI_RPFS_WriteStrided,     /* WriteStrided: one rpfs_writev */
	ADIOI_RPFS_Close,	     /* Close */
	ADIOI_RPFS_IreadContig,	     /* IreadContig: rpfs_ipread */
	ADIOI_RPFS_IwriteContig,     /* IwriteContig: rpfs_ipwrite */
	ADIOI_FAKE_IODone,	     /* ReadDone: unused (MPI requests) */
	ADIOI_FAKE_IODone,	     /* WriteDone: unused */
	ADIOI_FAKE_IOComplete,	     /* ReadComplete: unused */
	ADIOI_FAKE_IOComplete,	     /* WriteComplete: unused */
	ADIOI_RPFS_IreadStrided,     /* IreadStrided: rpfs_ireadv */
	ADIOI_RPFS_IwriteStrided,    /* IwriteStrided: rpfs_iwritev */
	ADIOI_RPFS_Flush,	     /* Flush: one rank syncs for all */
	ADIOI_RPFS_Resize,	     /* Resize: one rank truncates */
	ADIOI_RPFS_Delete,	     /* Delete: rpfs_remove */
	ADIOI_RPFS_Feature,	     /* Feature */
	"RPFS: the rpfs RDMA parallel file service", /* fsname */
	ADIOI_RPFS_IreadStridedColl,  /* IreadStridedColl: each rank's list I/O */
	ADIOI_RPFS_IwriteStridedColl, /* IwriteStridedColl: each rank's list I/O */
	ADIOI_RPFS_SetLock	      /* SetLock: metadata-server locks */
};
