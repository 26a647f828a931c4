/* File modes as chmod(1) takes them (cli_mode.h), following POSIX chmod:
 *
 *   mode    := octal | clause[,clause...]
 *   clause  := [ugoa...] action...
 *   action  := op [rwxXst...] | op (u|g|o)     op: + - =
 *
 * Who: u the owner's rwx and setuid, g the group's rwx and setgid, o the
 * others' rwx and the sticky bit, a all of them; none is like a except that
 * the bits set in the umask are left alone. Perms: r w x for every class
 * who names, X x where the file is a directory or already has an x bit,
 * s setuid/setgid, t sticky; u, g or o copy that class's rwx as it is at
 * this point. = clears what who names (everything without who) first.
 * Clauses apply left to right, each to the result of the one before. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli_mode.h"

#define MODE_ALL 07777u

/* The bits a who letter names, 0 for a letter that is not one. */
static uint32_t who_bits(char c)
{
	switch (c) {
	case 'u':
		return 04700;
	case 'g':
		return 02070;
	case 'o':
		return 01007;
	case 'a':
		return MODE_ALL;
	default:
		return 0;
	}
}

/* A perm letter's bits in every class (who masks them later). */
static uint32_t perm_bits(char c)
{
	switch (c) {
	case 'r':
		return 0444;
	case 'w':
		return 0222;
	case 'x':
		return 0111;
	case 's':
		return 06000;
	case 't':
		return 01000;
	default:
		return 0;
	}
}

/* The rwx of class c ('u', 'g', 'o') in mode, spread over every class. */
static uint32_t copy_bits(char c, uint32_t mode)
{
	int shift = c == 'u' ? 6 : c == 'g' ? 3 : 0;
	uint32_t rwx = (mode >> shift) & 7;

	return (rwx & 4 ? 0444u : 0) | (rwx & 2 ? 0222u : 0) | (rwx & 1 ? 0111u : 0);
}

static int octal(const char *spec, uint32_t *out)
{
	unsigned long v = 0;

	for (const char *p = spec; *p; p++) {
		if (*p < '0' || *p > '7')
			return -EINVAL;
		v = v * 8 + (unsigned long)(*p - '0');
		if (v > MODE_ALL)
			return -EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
}

/* One action at *p (op and its perms) applied to *mode; *p moves past it. */
static int action(const char **p, uint32_t who, bool is_dir, uint32_t umask_bits,
		  uint32_t *mode)
{
	char op = **p;
	uint32_t perms = 0, value;
	bool big_x = false;

	if (op != '+' && op != '-' && op != '=')
		return -EINVAL;
	++*p;
	if (**p == 'u' || **p == 'g' || **p == 'o') {
		perms = copy_bits(**p, *mode);
		++*p;
	} else {
		for (; perm_bits(**p) || **p == 'X'; ++*p) {
			perms |= perm_bits(**p);
			big_x |= **p == 'X';
		}
	}
	if (big_x && (is_dir || (*mode & 0111)))
		perms |= 0111;
	value = perms & (who ? who : MODE_ALL & ~umask_bits);
	if (op == '+')
		*mode |= value;
	else if (op == '-')
		*mode &= ~value;
	else
		*mode = (*mode & ~(who ? who : MODE_ALL)) | value;
	return 0;
}

int mode_apply(const char *spec, uint32_t old, bool is_dir, uint32_t umask_bits,
	       uint32_t *out)
{
	uint32_t mode = old & MODE_ALL;
	const char *p = spec;

	if (!spec || !*spec)
		return -EINVAL;
	if (*spec >= '0' && *spec <= '7')
		return octal(spec, out);
	for (;;) {
		uint32_t who = 0;

		for (; who_bits(*p); p++)
			who |= who_bits(*p);
		do {
			if (action(&p, who, is_dir, umask_bits, &mode))
				return -EINVAL;
		} while (*p == '+' || *p == '-' || *p == '=');
		if (!*p)
			break;
		if (*p++ != ',')
			return -EINVAL;
	}
	*out = mode;
	return 0;
}

bool mode_valid(const char *spec)
{
	uint32_t m;

	return !mode_apply(spec, 0, false, 0, &m);
}
