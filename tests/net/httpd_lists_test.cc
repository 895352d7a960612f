// The server's lists against a running httpd and against the documents that
// repeat them. Each list is written once: the close reasons, the counters
// and what /stats reads in net/counters.h, the flags in net/config.h. A
// list's entry missing anywhere fails here, naming the entry and the place
// that lacks it:
//   - GET /stats has exactly the keys the lists make (a counter the JSON
//     leaves out, or a key written by hand beside the lists);
//   - docs/NET.md's /stats table has exactly those keys;
//   - the conn_close probe's reason names (the /stats "closed" keys, from
//     the same array) are the ones docs/TRACING.md's probe table and
//     ktimer_probes(7) list;
//   - `httpd --help` names every flag of the table with its default, each
//     flag is taken with the default --help shows, and docs/NET.md shows
//     `httpd --help` as it prints.
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "net/config.h"
#include "net/counters.h"
#include "tests/support/httpd_proc.h"

namespace {

using Names = std::set<std::string>;

// ---- the lists, as this build's headers have them ----------------------

Names close_reasons() {
	Names n;
#define REASON(e, name) n.insert(#name);
	HTTPD_CLOSE_REASONS(REASON)
#undef REASON
	return n;
}

// The /stats keys the lists make: "open", "closed.peer", "workers[].id".
Names stats_keys_of_the_lists() {
	Names n;
#define COUNTER(name, where)                         \
	if ((where) & HTTPD_STAT_TOTAL)              \
		n.insert(#name);                     \
	if ((where) & HTTPD_STAT_WORKER)             \
		n.insert("workers[]." #name);
	HTTPD_COUNTERS(COUNTER)
#undef COUNTER
#define JEMALLOC(name) n.insert("jemalloc." #name);
	HTTPD_JEMALLOC_STATS(JEMALLOC)
#undef JEMALLOC
#define READ(name) n.insert("workers[]." #name);
	HTTPD_WORKER_READS(READ)
#undef READ
	for (const std::string &r : close_reasons())
		n.insert("closed." + r);
	return n;
}

std::vector<std::string> flags_of_the_table() {
	std::vector<std::string> f;
#define FLAG(flag, field, kind, def, min, max, value, help) f.push_back(flag);
	HTTPD_OPTIONS(FLAG)
#undef FLAG
	return f;
}

// ---- reading what the server and the documents say ---------------------

// The leaf paths of a JSON value ("a.b", "workers[].c"); false if `s` is not
// JSON of objects, arrays, numbers, strings and literals.
class JsonKeys {
public:
	explicit JsonKeys(const std::string &s) : s_(s) {}
	bool read(Names *out, size_t *workers) {
		out_ = out;
		workers_ = workers;
		if (!value(""))
			return false;
		space();
		return p_ == s_.size();
	}

private:
	void space() {
		while (p_ < s_.size() && isspace((unsigned char)s_[p_]))
			p_++;
	}
	bool string(std::string *out) {
		if (p_ >= s_.size() || s_[p_] != '"')
			return false;
		for (p_++; p_ < s_.size() && s_[p_] != '"'; p_++) {
			if (s_[p_] == '\\')
				p_++;
			if (out && p_ < s_.size())
				*out += s_[p_];
		}
		return p_++ < s_.size();
	}
	bool value(const std::string &path) {
		space();
		if (p_ >= s_.size())
			return false;
		char c = s_[p_];
		if (c == '{') {
			p_++;
			space();
			if (p_ < s_.size() && s_[p_] == '}')
				{
				p_++;
				return true;
			}
			for (;;) {
				std::string key;
				space();
				if (!string(&key))
					return false;
				space();
				if (p_ >= s_.size() || s_[p_++] != ':')
					return false;
				if (!value(path.empty() ? key : path + "." + key))
					return false;
				space();
				if (p_ < s_.size() && s_[p_] == ',') {
					p_++;
					continue;
				}
				return p_ < s_.size() && s_[p_++] == '}';
			}
		}
		if (c == '[') {
			p_++;
			space();
			if (p_ < s_.size() && s_[p_] == ']')
				{
				p_++;
				return true;
			}
			for (;;) {
				if (path == "workers")
					++*workers_;
				if (!value(path + "[]"))
					return false;
				space();
				if (p_ < s_.size() && s_[p_] == ',') {
					p_++;
					continue;
				}
				return p_ < s_.size() && s_[p_++] == ']';
			}
		}
		size_t start = p_;
		if (c == '"') {
			if (!string(nullptr))
				return false;
		} else {
			while (p_ < s_.size() && (isalnum((unsigned char)s_[p_]) || strchr("+-.", s_[p_])))
				p_++;
			if (p_ == start)
				return false;
		}
		out_->insert(path);
		return true;
	}

	const std::string &s_;
	size_t p_ = 0;
	Names *out_ = nullptr;
	size_t *workers_ = nullptr;
};

std::string doc(const std::string &path) {
	std::string s = kt_test::slurp(path);
	EXPECT_FALSE(s.empty()) << path << " is missing from the test's data";
	return s;
}

// The text of section "## title" of a Markdown file, up to the next "## ".
std::string section(const std::string &md, const std::string &title) {
	size_t at = md.find("\n## " + title + "\n");
	if (at == std::string::npos)
		return "";
	size_t end = md.find("\n## ", at + 1);
	return md.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// The first cells of a Markdown table's rows that are one `code` span.
Names table_keys(const std::string &text) {
	Names n;
	size_t p = 0;
	while ((p = text.find("\n| `", p)) != std::string::npos) {
		p += 4;
		size_t end = text.find('`', p);
		if (end != std::string::npos && text.compare(end, 3, "` |") == 0)
			n.insert(text.substr(p, end - p));
	}
	return n;
}

// The comma-separated names after `marker` in `text`, up to the first
// character that is neither a name's nor a separator's (".", ")").
Names list_after(const std::string &text, const std::string &marker) {
	Names n;
	size_t p = text.find(marker);
	if (p == std::string::npos)
		return n;
	p += marker.size();
	std::string name;
	for (; p < text.size(); p++) {
		char c = text[p];
		if (islower((unsigned char)c) || isdigit((unsigned char)c) || c == '_') {
			name += c;
			continue;
		}
		if (!name.empty())
			n.insert(name);
		name.clear();
		if (c != ',' && c != ' ' && c != '\n')
			break;
	}
	return n;
}

// Every entry of `want` that `have` lacks, and every entry of `have` that
// `want` lacks, as failures naming them and the places.
void expect_same(const Names &want, const std::string &want_where, const Names &have, const std::string &have_where) {
	for (const std::string &k : want)
		if (!have.count(k))
			ADD_FAILURE() << have_where << " lacks " << k << " (" << want_where << " has it)";
	for (const std::string &k : have)
		if (!want.count(k))
			ADD_FAILURE() << have_where << " has " << k << ", not in " << want_where;
}

Names live_stats_keys(size_t *workers) {
	kt_test::Httpd s({"--workers", "2"});
	EXPECT_GT(s.port(), 0) << s.err();
	std::string body = kt_test::get_stats(s.port());
	Names keys;
	*workers = 0;
	EXPECT_TRUE(JsonKeys(body).read(&keys, workers)) << "GET /stats is not JSON:\n" << body;
	return keys;
}

Names closed_keys(const Names &stats) {
	Names n;
	for (const std::string &k : stats)
		if (k.rfind("closed.", 0) == 0)
			n.insert(k.substr(7));
	return n;
}

// ---- /stats -------------------------------------------------------------

TEST(HttpdLists, StatsHasTheKeysOfTheListsAndNoOther) {
	size_t workers;
	Names live = live_stats_keys(&workers);
	EXPECT_EQ(workers, 2u);
	expect_same(stats_keys_of_the_lists(), "net/counters.h's lists", live, "GET /stats");
}

TEST(HttpdLists, NetMdStatsTableHasTheKeysOfStats) {
	size_t workers;
	Names live = live_stats_keys(&workers);
	std::string md = doc("docs/NET.md");
	Names table = table_keys(section(md, "/stats"));
	ASSERT_FALSE(table.empty()) << "docs/NET.md has no `key` table under \"## /stats\"";
	expect_same(live, "GET /stats", table, "docs/NET.md's /stats table");
}

TEST(HttpdLists, TheProbeDocsNameTheCloseReasonsOfStats) {
	size_t workers;
	Names reasons = closed_keys(live_stats_keys(&workers));
	expect_same(close_reasons(), "net/counters.h's HTTPD_CLOSE_REASONS", reasons, "GET /stats' \"closed\"");

	std::string tracing = doc("docs/TRACING.md");
	size_t row = tracing.find("\n| `httpd:conn_close` |");
	ASSERT_NE(row, std::string::npos) << "docs/TRACING.md has no `httpd:conn_close` row";
	std::string line = tracing.substr(row + 1, tracing.find('\n', row + 1) - row - 1);
	Names listed = list_after(line, "reason_name is that key: ");
	ASSERT_FALSE(listed.empty()) << "docs/TRACING.md's conn_close row lists no reason after "
				     << "\"reason_name is that key: \": " << line;
	expect_same(reasons, "GET /stats' \"closed\" (the conn_close probe's reason_name)", listed,
		    "docs/TRACING.md's httpd:conn_close row");

	std::string man = doc("man/man7/ktimer_probes.7");
	size_t at = man.find("\n.B httpd:conn_close\n");
	ASSERT_NE(at, std::string::npos) << "man/man7/ktimer_probes.7 has no httpd:conn_close entry";
	std::string entry = man.substr(at, man.find("\n.TP", at + 1) - at);
	listed = list_after(entry, "one of\n");
	ASSERT_FALSE(listed.empty()) << "ktimer_probes(7)'s httpd:conn_close entry lists no reason after \"one of\": "
				     << entry;
	expect_same(reasons, "GET /stats' \"closed\" (the conn_close probe's reason_name)", listed,
		    "man/man7/ktimer_probes.7 (tools/gen/man/ktimer_probes.7.in, then tools/gen/mkman)");
}

// ---- flags --------------------------------------------------------------

// --help's entries: flag -> its text, from "  --flag" to the next entry.
std::vector<std::pair<std::string, std::string>> help_entries(const std::string &help) {
	std::vector<std::pair<std::string, std::string>> e;
	size_t p = 0;
	while ((p = help.find("\n  --", p)) != std::string::npos) {
		size_t start = p + 3, name_end = help.find_first_of(" \n", start);
		size_t end = help.find("\n  --", start);
		size_t blank = help.find("\n\n", start);
		if (blank < end)
			end = blank;
		e.emplace_back(help.substr(start, name_end - start), help.substr(start, end - start));
		p = start;
	}
	return e;
}

std::string help_text() { return kt_test::run(kt_test::httpd_bin() + " --help"); }

// "(default X)" of an entry, its newlines and indentation as spaces.
std::string default_of(std::string entry) {
	for (size_t p; (p = entry.find("\n ")) != std::string::npos;)
		entry.replace(p, entry.find_first_not_of(' ', p + 1) - p, " ");
	size_t at = entry.rfind("(default ");
	if (at == std::string::npos)
		return "";
	return entry.substr(at + 9, entry.find(')', at) - at - 9);
}

TEST(HttpdLists, HelpNamesEveryFlagOfTheTableWithItsDefault) {
	std::string out = kt_test::run(kt_test::httpd_bin() + " --help; echo \"exit=$?\"");
	EXPECT_NE(out.find("exit=0"), std::string::npos) << out;
	Names table, shown;
	for (const std::string &f : flags_of_the_table())
		table.insert(f);
	table.insert("--help");
	for (auto &[flag, entry] : help_entries(out)) {
		shown.insert(flag);
		if (flag != "--help" && default_of(entry).empty())
			ADD_FAILURE() << flag << ": its --help entry names no \"(default ...)\":\n" << entry;
	}
	expect_same(table, "net/config.h's HTTPD_OPTIONS", shown, "httpd --help");
}

// What --help calls a flag's default is a value it takes.
TEST(HttpdLists, EveryFlagTakesTheDefaultHelpShows) {
	std::string help = help_text();
	for (auto &[flag, entry] : help_entries(help)) {
		if (flag == "--help")
			continue;
		std::string value = entry.substr(flag.size(), entry.find_first_of("\n", flag.size()) - flag.size());
		bool takes_value = value.size() > 1 && value[0] == ' ' && value[1] != ' ';
		std::string args = flag + (takes_value ? " '" + default_of(entry) + "'" : "");
		std::string out = kt_test::run(kt_test::httpd_bin() + " " + args + " --help 2>&1 >/dev/null; echo \"exit=$?\"");
		if (out != "exit=0\n")
			ADD_FAILURE() << "httpd " << args << " --help: " << flag
				      << " does not take the default --help shows:\n" << out;
	}
}

// The --workers default is the machine's CPU count: the same word in both.
std::string without_cpu_count(std::string help) {
	size_t at = help.find("\n  --workers ");
	if (at != std::string::npos) {
		size_t d = help.find("(default ", at);
		if (d != std::string::npos)
			help.replace(d + 9, help.find(')', d) - d - 9, "CPUS");
	}
	return help;
}

TEST(HttpdLists, NetMdShowsHelpAsHttpdPrintsIt) {
	std::string md = doc("docs/NET.md");
	const std::string open = "```\n$ httpd --help\n";
	size_t at = md.find(open);
	ASSERT_NE(at, std::string::npos) << "docs/NET.md has no ```$ httpd --help block";
	at += open.size();
	std::string shown = without_cpu_count(md.substr(at, md.find("```\n", at) - at));
	std::string help = without_cpu_count(help_text());
	if (shown == help)
		return;
	auto doc_entries = help_entries(shown);
	for (auto &[flag, entry] : help_entries(help)) {
		bool found = false;
		for (auto &[dflag, dentry] : doc_entries) {
			if (dflag != flag)
				continue;
			found = true;
			if (dentry != entry)
				ADD_FAILURE() << "docs/NET.md's `httpd --help` block differs from httpd --help at " << flag
					      << ":\n" << dentry << "\nhttpd --help:\n" << entry;
		}
		if (!found)
			ADD_FAILURE() << "docs/NET.md's `httpd --help` block lacks " << flag << " (httpd --help has it)";
	}
	for (auto &[dflag, dentry] : doc_entries)
		if (help.find("\n  " + dflag + " ") == std::string::npos)
			ADD_FAILURE() << "docs/NET.md's `httpd --help` block has " << dflag << ", which httpd --help does not";
	ADD_FAILURE() << "docs/NET.md's `httpd --help` block is not what httpd --help prints: paste the output of "
			 "`bazel run //net:httpd -- --help` (the --workers default is the CPU count, either is fine)";
}

} // namespace
