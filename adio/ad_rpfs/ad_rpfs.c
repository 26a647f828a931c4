/* ad_rpfs.c: the rpfs driver's ADIOI_Fns table, and nothing else.
 *
 * Generalized requests (ad_rpfs_aio.c) make the nonblocking slots truly
 * asynchronous; the strided slots are list I/O (ad_rpfs_io_list.c); the
 * lock slot serves ROMIO's shared file pointer and atomic mode
 * (ad_rpfs_lock.c).
 *
 * Each operation lives in its own file (ad_rpfs_<op>.c). Collective I/O uses
 * ROMIO's generic two-phase code, whose file domains follow
 * fd->hints->striping_unit, which the driver sets to the file's stripe unit
 * at open: each aggregator's domain then starts on a stripe boundary. */
#include "ad_rpfs.h"

struct ADIOI_Fns_struct ADIO_RPFS_operations = {
	ADIOI_RPFS_Open,	    /* Open: rank 0 looks up, broadcasts */
	ADIOI_RPFS_OpenColl,	    /* OpenColl: one collective pass */
	ADIOI_RPFS_ReadContig,	    /* ReadContig: rpfs_pread */
	ADIOI_RPFS_WriteContig,	    /* WriteContig: rpfs_pwrite */
	ADIOI_GEN_ReadStridedColl,  /* ReadStridedColl: two-phase */
	ADIOI_GEN_WriteStridedColl, /* WriteStridedColl: two-phase */
	ADIOI_GEN_SeekIndividual,   /* SeekIndividual: view arithmetic */
	ADIOI_RPFS_Fcntl,	    /* Fcntl: size, preallocate, atomicity */
	ADIOI_RPFS_SetInfo,	    /* SetInfo: striping, rpfs_*, then ROMIO */
	ADIOI_RPFS_ReadStrided,	    /* ReadStrided: one rpfs_readv */
	ADIOI_RPFS_WriteStrided,    /* WriteStrided: one rpfs_writev */
	ADIOI_RPFS_Close,	    /* Close */
#ifdef HAVE_MPI_GREQUEST_EXTENSIONS
	ADIOI_RPFS_IreadContig,	 /* IreadContig: rpfs_ipread */
	ADIOI_RPFS_IwriteContig, /* IwriteContig: rpfs_ipwrite */
#else
	ADIOI_FAKE_IreadContig,	  /* IreadContig */
	ADIOI_FAKE_IwriteContig,  /* IwriteContig */
#endif
	ADIOI_FAKE_IODone,     /* ReadDone: unused (MPI requests) */
	ADIOI_FAKE_IODone,     /* WriteDone: unused */
	ADIOI_FAKE_IOComplete, /* ReadComplete: unused */
	ADIOI_FAKE_IOComplete, /* WriteComplete: unused */
#ifdef HAVE_MPI_GREQUEST_EXTENSIONS
	ADIOI_RPFS_IreadStrided,  /* IreadStrided: rpfs_ireadv */
	ADIOI_RPFS_IwriteStrided, /* IwriteStrided: rpfs_iwritev */
#else
	ADIOI_FAKE_IreadStrided,  /* IreadStrided */
	ADIOI_FAKE_IwriteStrided, /* IwriteStrided */
#endif
	ADIOI_RPFS_Flush,			     /* Flush: one rank syncs for all */
	ADIOI_RPFS_Resize,			     /* Resize: one rank truncates */
	ADIOI_RPFS_Delete,			     /* Delete: rpfs_remove */
	ADIOI_RPFS_Feature,			     /* Feature */
	"RPFS: the rpfs RDMA parallel file service", /* fsname */
	ADIOI_GEN_IreadStridedColl,		     /* IreadStridedColl: two-phase */
	ADIOI_GEN_IwriteStridedColl,		     /* IwriteStridedColl: two-phase */
	ADIOI_RPFS_SetLock			     /* SetLock: metadata-server locks */
};
