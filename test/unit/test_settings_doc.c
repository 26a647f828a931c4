/* The table of transport settings in docs/settings.md is the program's: the
 * lines between its two markers must be exactly what `rpfs settings
 * --markdown` prints (xp_settings_markdown, from the table in params.c), so
 * a setting added, renamed or given another default cannot leave the
 * document behind. The check itself is tested on changed copies of the
 * document, so that it cannot pass by finding nothing to compare. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "params.h"

#ifndef RPFS_SETTINGS_DOC
#error "build with -DRPFS_SETTINGS_DOC=path/to/docs/settings.md"
#endif

#define TABLE_START "<!-- The table below is `rpfs settings --markdown`"
#define TABLE_END   "<!-- end of the settings table -->"

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t len = 0;

	ck_assert_msg(f != NULL, "cannot open %s", path);
	ck_assert_int_eq(getdelim(&text, &len, '\0', f) > 0, 1);
	fclose(f);
	return text;
}

static char *program_table(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(f);
	xp_settings_markdown(f);
	fclose(f);
	return text;
}

/* The table lines of doc: after the start marker's comment closes, up
 * to the end marker, blank lines dropped. NULL without both markers. */
static char *doc_table(const char *doc)
{
	const char *start = strstr(doc, TABLE_START), *end;
	char *out, *o;

	if (!start || !(start = strstr(start, "-->")) ||
	    !(end = strstr(start, TABLE_END)))
		return NULL;
	start += 3;
	out = o = malloc((size_t)(end - start) + 1);
	ck_assert_ptr_nonnull(out);
	while (start < end) {
		const char *nl = memchr(start, '\n', (size_t)(end - start));
		size_t n = nl ? (size_t)(nl - start) + 1 : (size_t)(end - start);

		if (strspn(start, " \t\n") < n) {
			memcpy(o, start, n);
			o += n;
		}
		start += n;
	}
	*o = '\0';
	return out;
}

/* 0 when doc holds the program's table; else -1 and why names the first
 * line that differs. */
static int table_check(const char *doc, char *why, size_t whylen)
{
	char *want = program_table(), *have = doc_table(doc);
	const char *w = want, *h = have;
	int line = 1, ret = 0;

	if (!have) {
		snprintf(why, whylen, "no settings table between \"%s\" and \"%s\"",
			 TABLE_START, TABLE_END);
		free(want);
		return -1;
	}
	while (*w || *h) {
		size_t wn = strcspn(w, "\n"), hn = strcspn(h, "\n");

		if (wn != hn || memcmp(w, h, wn)) {
			snprintf(
				why, whylen,
				"table line %d is\n  %.*s\nbut `rpfs settings --markdown` prints\n  %.*s",
				line, (int)hn, *h ? h : "(end of table)", (int)wn,
				*w ? w : "(end of table)");
			ret = -1;
			break;
		}
		w += wn + (w[wn] == '\n');
		h += hn + (h[hn] == '\n');
		line++;
	}
	free(want);
	free(have);
	return ret;
}

/* A copy of the document with the first "from" in the table replaced. */
static char *doc_with(const char *from, const char *to)
{
	char *doc = read_file(RPFS_SETTINGS_DOC);
	char *table = strstr(doc, TABLE_START), *at, *out;

	ck_assert_ptr_nonnull(table);
	at = strstr(table, from);
	ck_assert_ptr_nonnull(at);
	out = malloc(strlen(doc) + strlen(to) + 1);
	ck_assert_ptr_nonnull(out);
	sprintf(out, "%.*s%s%s", (int)(at - doc), doc, to, at + strlen(from));
	free(doc);
	return out;
}

static void expect_mismatch(char *doc, const char *what)
{
	char why[1024] = "";

	ck_assert_msg(table_check(doc, why, sizeof(why)) == -1, "%s not noticed", what);
	ck_assert_msg(why[0], "%s: no reason", what);
	free(doc);
}

START_TEST(doc_table_is_what_rpfs_settings_prints)
{
	char *doc = read_file(RPFS_SETTINGS_DOC);
	char why[1024] = "";

	ck_assert_msg(table_check(doc, why, sizeof(why)) == 0,
		      "%s: %s\n(regenerate the table with `rpfs settings --markdown`)",
		      RPFS_SETTINGS_DOC, why);
	free(doc);
}
END_TEST

START_TEST(check_notices_a_changed_default)
{
	expect_mismatch(doc_with("| `4K` |", "| `8K` |"), "a changed default");
}
END_TEST

START_TEST(check_notices_a_missing_setting)
{
	char *doc = read_file(RPFS_SETTINGS_DOC);
	char *row = strstr(doc, "| `spin_us` |"), *nl;

	ck_assert_ptr_nonnull(row);
	nl = strchr(row, '\n');
	memmove(row, nl + 1, strlen(nl + 1) + 1);
	expect_mismatch(doc, "a missing row");
}
END_TEST

START_TEST(check_notices_an_extra_setting)
{
	expect_mismatch(
		doc_with(TABLE_END,
			 "| `old_key` | size | `1` | 1 .. 2 | no | gone |\n" TABLE_END),
		"an extra row");
}
END_TEST

START_TEST(check_notices_a_missing_table)
{
	expect_mismatch(doc_with(TABLE_END, "<!-- end -->"), "a missing end marker");
}
END_TEST

/* One row per setting, in table order, with its client column. */
START_TEST(markdown_has_a_row_per_setting)
{
	char *text = program_table(), *p = text;
	const struct xp_setting *st;
	char row[128], line[512];

	for (int i = 0; (st = xp_setting_at(i)); i++) {
		snprintf(row, sizeof(row), "\n| `%s` |", st->name);
		p = strstr(p, row);
		ck_assert_msg(p != NULL, "%s: no row (or out of order)", st->name);
		p++;
		snprintf(line, sizeof(line), "%.*s", (int)strcspn(p, "\n"), p);
		snprintf(row, sizeof(row), "| %s | ",
			 st->scope == XP_SCOPE_CLIENT ? "yes" : "no");
		ck_assert_msg(strstr(line, row), "%s: client column in %s", st->name,
			      line);
	}
	ck_assert_ptr_null(strstr(p + 1, "\n| `"));
	free(text);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("settings_doc");
	TCase *tc = tcase_create("doc");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, doc_table_is_what_rpfs_settings_prints);
	tcase_add_test(tc, check_notices_a_changed_default);
	tcase_add_test(tc, check_notices_a_missing_setting);
	tcase_add_test(tc, check_notices_an_extra_setting);
	tcase_add_test(tc, check_notices_a_missing_table);
	tcase_add_test(tc, markdown_has_a_row_per_setting);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
