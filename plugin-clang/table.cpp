/* SPDX-License-Identifier: MIT */
/* plugin-clang/table.cpp — text encoding of the front end -> pass decision table (table.h). */
#include "table.h"

#include <cstdlib>
#include <vector>

namespace perfgroup_clang {

static void putField(std::string &out, const std::string &s)
{
    out += '\t';
    for (char c : s) {
        if (c == '\\') out += "\\\\";
        else if (c == '\t') out += "\\t";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
}

std::string encodeTable(const Table &t)
{
    std::string out = TableMagic;
    out += "\nlang\t";
    out += t.cxx ? "c++" : "c";
    if (t.weak) out += "\nweak";
    if (t.verbose) out += "\nverbose";
    if (t.allFunctions) out += "\nall-functions";
    for (const auto &kv : t.rows) {
        out += "\nfn";
        putField(out, kv.first);
        putField(out, kv.second.attr);
        putField(out, kv.second.filegroup);
        putField(out, kv.second.file);
        putField(out, std::to_string(kv.second.line));
        putField(out, kv.second.skip);
        putField(out, kv.second.display);
        putField(out, kv.second.inl ? "inline" : "");
    }
    out += '\n';
    return out;
}

/* Splits one line into unescaped fields. */
static std::vector<std::string> splitLine(const std::string &line)
{
    std::vector<std::string> f(1);
    for (size_t i = 0; i < line.size(); i++) {
        char c = line[i];
        if (c == '\t') {
            f.emplace_back();
        } else if (c == '\\' && i + 1 < line.size()) {
            char n = line[++i];
            f.back() += n == 't' ? '\t' : n == 'n' ? '\n' : n;
        } else {
            f.back() += c;
        }
    }
    return f;
}

bool decodeTable(const std::string &text, Table &t)
{
    size_t pos = 0;
    bool first = true;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string::npos) nl = text.size();
        std::string line = text.substr(pos, nl - pos);
        pos = nl + 1;
        if (first) {
            if (line != TableMagic) return false;
            first = false;
            continue;
        }
        if (line.empty()) continue;
        std::vector<std::string> f = splitLine(line);
        if (f[0] == "lang" && f.size() == 2) {
            t.cxx = f[1] == "c++";
        } else if (f[0] == "weak" && f.size() == 1) {
            t.weak = true;
        } else if (f[0] == "verbose" && f.size() == 1) {
            t.verbose = true;
        } else if (f[0] == "all-functions" && f.size() == 1) {
            t.allFunctions = true;
        } else if (f[0] == "fn" && f.size() == 9) {
            Row &r = t.rows[f[1]];
            r.attr = f[2];
            r.filegroup = f[3];
            r.file = f[4];
            r.line = (unsigned)std::strtoul(f[5].c_str(), nullptr, 10);
            r.skip = f[6];
            r.display = f[7];
            r.inl = f[8] == "inline";
        } else {
            return false;
        }
    }
    return !first;
}

} // namespace perfgroup_clang
