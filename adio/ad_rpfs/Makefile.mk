##
## rpfs ROMIO driver: copied to src/mpi/romio/adio/ad_rpfs by
## scripts/build-mpich.sh and included from adio/Makefile.mk (romio.patch).
##

if BUILD_AD_RPFS

noinst_HEADERS += adio/ad_rpfs/ad_rpfs.h

romio_other_sources +=                  \
    adio/ad_rpfs/ad_rpfs.c              \
    adio/ad_rpfs/ad_rpfs_open.c         \
    adio/ad_rpfs/ad_rpfs_close.c        \
    adio/ad_rpfs/ad_rpfs_read.c         \
    adio/ad_rpfs/ad_rpfs_write.c        \
    adio/ad_rpfs/ad_rpfs_io_list.c      \
    adio/ad_rpfs/ad_rpfs_coll.c         \
    adio/ad_rpfs/ad_rpfs_aio.c          \
    adio/ad_rpfs/ad_rpfs_fcntl.c        \
    adio/ad_rpfs/ad_rpfs_hints.c        \
    adio/ad_rpfs/ad_rpfs_resize.c       \
    adio/ad_rpfs/ad_rpfs_flush.c        \
    adio/ad_rpfs/ad_rpfs_delete.c       \
    adio/ad_rpfs/ad_rpfs_features.c     \
    adio/ad_rpfs/ad_rpfs_lock.c         \
    adio/ad_rpfs/ad_rpfs_error.c        \
    adio/ad_rpfs/ad_rpfs_path.c

endif BUILD_AD_RPFS
