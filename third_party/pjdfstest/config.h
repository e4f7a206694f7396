/* What pjdfstest's configure script finds on Linux with glibc (Debian 13), written out so the
 * suite builds with a C compiler alone: `cc -o pjdfstest pjdfstest.c` in this directory.
 * (iopath vendors pjdfstest; see README.iopath.) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#define HAVE_FACCESSAT 1
#define HAVE_FCHMODAT 1
#define HAVE_FCHOWNAT 1
#define HAVE_FSTATAT 1
#define HAVE_LCHMOD 1
#define HAVE_LINKAT 1
#define HAVE_MKDIRAT 1
#define HAVE_MKFIFOAT 1
#define HAVE_MKNODAT 1
#define HAVE_OPENAT 1
#define HAVE_POSIX_FALLOCATE 1
#define HAVE_READLINKAT 1
#define HAVE_RENAMEAT 1
#define HAVE_STRUCT_STAT_ST_ATIM 1
#define HAVE_STRUCT_STAT_ST_CTIM 1
#define HAVE_STRUCT_STAT_ST_MTIM 1
#define HAVE_SYMLINKAT 1
#define HAVE_SYS_SYSMACROS_H 1
#define HAVE_UTIMENSAT 1
