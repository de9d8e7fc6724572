# PYPERF_REQUIRE_PKG(VAR, MODULE, DEBIAN-PACKAGE)
# pkg-config check that fails naming the Debian package to install.
AC_DEFUN([PYPERF_REQUIRE_PKG], [
	PKG_CHECK_MODULES([$1], [$2], [],
		[AC_MSG_ERROR([$2 not found: install the Debian package $3 (apt-get install $3)])])
])

# PYPERF_REQUIRE_PROG(VAR, PROGRAM, DEBIAN-PACKAGE)
# Looks in PATH and sbin directories (bpftool lives in /usr/sbin).
AC_DEFUN([PYPERF_REQUIRE_PROG], [
	AC_PATH_PROG([$1], [$2], [], [$PATH:/usr/sbin:/sbin:/usr/local/sbin])
	AS_IF([test -z "$$1"],
		[AC_MSG_ERROR([$2 not found: install the Debian package $3 (apt-get install $3)])])
])
