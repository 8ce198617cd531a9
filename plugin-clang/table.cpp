/* SPDX-License-Identifier: MIT */
/* plugin-clang/table.cpp — the front end -> pass decision table (table.h): its text
 * encoding, and the pass's side of the hand-over: the table and the perfgroup: annotations
 * taken out of the module (the front end writes the table: select.cpp, emitTable). */
#include "plugin.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Module.h"

#include "llvm-compat.h" /* after LLVM: every version #if */

#include <cstdlib>
#include <cstring>
#include <vector>

using namespace llvm;

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

/* ---- The pass's inputs: the front end's table and llvm.global.annotations ------------------ */

static std::string cString(const Value *v)
{
    auto *gv = dyn_cast<GlobalVariable>(v->stripPointerCasts());
    if (!gv || !gv->hasInitializer()) return "";
    auto *cda = dyn_cast<ConstantDataSequential>(gv->getInitializer());
    if (!cda || !cda->isString()) return "";
    StringRef s = cda->getAsString();
    return s.substr(0, s.find('\0')).str();
}

/* Rewrites the array global `name` (llvm.used, llvm.compiler.used, llvm.global.annotations)
 * keeping the elements `keep` accepts; deletes it when nothing is left. */
static void filterArrayGlobal(Module &M, StringRef name, function_ref<bool(Constant *)> keep)
{
    GlobalVariable *gv = M.getNamedGlobal(name);
    if (!gv || !gv->hasInitializer()) return;
    auto *arr = dyn_cast<ConstantArray>(gv->getInitializer());
    if (!arr) return;
    std::vector<Constant *> kept;
    for (Use &u : arr->operands())
        if (keep(cast<Constant>(u.get()))) kept.push_back(cast<Constant>(u.get()));
    if (kept.size() == arr->getNumOperands()) return;
    std::string section = gv->getSection().str();
    GlobalValue::LinkageTypes linkage = gv->getLinkage();
    gv->setName("");
    if (!kept.empty()) {
        ArrayType *t = ArrayType::get(arr->getType()->getElementType(), kept.size());
        auto *n = new GlobalVariable(M, t, gv->isConstant(), linkage, ConstantArray::get(t, kept),
                                     name);
        n->setSection(section);
    }
    gv->eraseFromParent();
}

/* Takes the front end's table out of the module. Returns false if there is none:
 * IR that did not come through the front end (.ll/.bc input, -save-temps' backend step of a
 * module compiled without the plugin). */
bool takeTable(Module &M, Table &t)
{
    GlobalVariable *found = nullptr;
    for (GlobalVariable &gv : M.globals()) {
        if (gv.getSection() != "llvm.metadata" || !gv.hasInitializer()) continue;
        auto *cda = dyn_cast<ConstantDataSequential>(gv.getInitializer());
        if (cda && cda->isString() && pgStartsWith(cda->getAsString(), TableMagic)) {
            found = &gv;
            break;
        }
    }
    if (!found) return false;
    StringRef s = cast<ConstantDataSequential>(found->getInitializer())->getAsString();
    bool ok = decodeTable(s.substr(0, s.find('\0')).str(), t);
    for (const char *used : {"llvm.used", "llvm.compiler.used"})
        filterArrayGlobal(M, used, [&](Constant *c) { return c->stripPointerCasts() != found; });
    found->removeDeadConstantUsers();
    if (found->use_empty()) found->eraseFromParent();
    if (!ok) report_fatal_error(Twine("perfgroup: malformed front-end table in module ") +
                                M.getModuleIdentifier(), false);
    return true;
}

/* Takes our "perfgroup:<group>" entries out of llvm.global.annotations: they would keep
 * annotated inline functions alive, and consuming them makes the pass idempotent. */
void takeAnnotations(Module &M, std::map<Function *, Want> &out)
{
    std::set<GlobalVariable *> strings; /* one file name string serves many entries */
    filterArrayGlobal(M, "llvm.global.annotations", [&](Constant *e) {
        auto *cs = dyn_cast<ConstantStruct>(e);
        if (!cs || cs->getNumOperands() < 4) return true;
        std::string ann = cString(cs->getOperand(1));
        if (!pgStartsWith(StringRef(ann), AnnotationPrefix)) return true;
        if (auto *f = dyn_cast<Function>(cs->getOperand(0)->stripPointerCasts())) {
            Want &w = out[f];
            if (w.attr.empty()) { /* the first is the definition's own attribute */
                w.attr = ann.substr(strlen(AnnotationPrefix));
                w.file = cString(cs->getOperand(2));
                if (auto *ci = dyn_cast<ConstantInt>(cs->getOperand(3)))
                    w.line = (unsigned)ci->getZExtValue();
            }
        }
        for (unsigned i : {1u, 2u})
            if (auto *gv = dyn_cast<GlobalVariable>(cs->getOperand(i)->stripPointerCasts()))
                strings.insert(gv);
        return false;
    });
    for (GlobalVariable *gv : strings) {
        gv->removeDeadConstantUsers();
        if (gv->use_empty() && gv->hasLocalLinkage()) gv->eraseFromParent();
    }
}

} // namespace perfgroup_clang
