/* SPDX-License-Identifier: MIT */
/*
 * plugin-gcc/instrument.cc — what perfgroup.so adds to a function: its site descriptor, the
 * enter/exit hook pair around its body, and once per translation unit the constructor that
 * registers the module's sites. Every name, size and number comes from include/perfgroup/abi.h.
 *
 * Before (source):                          After (GIMPLE, as x.c.*t.perfgroup shows it):
 *
 *   PERF_GROUP("net")                         static struct perfgroup_site __perfgroup_site_parse
 *   int parse(const char *s) {                  __attribute__((section("perfgroup_sites"),
 *       if (!s)                                               aligned(8), used))
 *           return -1;                          = { 2, GCC|ATTR, 2, "net\0\0", "parse\0x.c\0", 0, 0 };
 *       return work(s);                       int parse(const char *s) {
 *   }                                           perfgroup_tok = 0;
 *                                               if ((__perfgroup_site_parse.key | __perfgroup_cur.mask) != ~0
 *                                                   || __builtin_dwarf_cfa () > __perfgroup_cur.sp)
 *                                                 perfgroup_tok = __perfgroup_enter(&__perfgroup_site_parse);
 *                                               try {
 *                                                   if (!s) return -1;
 *                                                   return work(s);
 *                                               } finally {
 *                                                   if (perfgroup_tok != 0)
 *                                                     __perfgroup_exit(&__perfgroup_site_parse, perfgroup_tok);
 *                                               }
 *                                             }
 *
 * The test before the enter hook is the inline re-entry check (include/perfgroup/abi.h): a
 * call of a function whose groups already run, below the frame that started them, calls
 * nothing (the runtime keeps the site's key and the thread's __perfgroup_cur).
 *
 * plus, once per translation unit that got a site, a static constructor (priority 101)
 *   static void __perfgroup_module_ctor(void) {
 *     __perfgroup_register_module(3, __start_perfgroup_sites,   (2 with weak-hooks)
 *                                 __stop_perfgroup_sites); }
 * whose hidden __start_/__stop_ references resolve inside the module (executable or shared
 * object) being linked, so every module registers its own sites; the runtime ignores repeats.
 * A COMDAT function's site is a hidden COMDAT variable outside the section (one per module),
 * which an entry of the section points at (see build_site).
 * With weak-hooks, the three runtime functions are declared weak, enter and register guarded by
 * `if (&hook)` instead of the inline check (the exit is guarded by its token anyway)
 * (perfgroup_tok starts at 0): an object links and runs without the runtime, hooks doing
 * nothing, and linking the runtime makes them live.
 *
 * The pass runs before GCC's "lower" pass, i.e. on high GIMPLE where try/finally still exists
 * (the spot where GCC itself wraps bodies for -finstrument-functions). Lowering then sends every
 * return through the finally block, EH lowering runs it on unwinding, and the inliner copies
 * the whole pair with the body: one pair per logical call at any -O level.
 */
#include "plugin.h"

#include <string.h>

namespace perfgroup_gcc {

/* ---- Trees we build -------------------------------------------------------------------- */

static GTY (()) tree site_type;
static GTY (()) tree enter_decl;
static GTY (()) tree exit_decl;
static GTY (()) tree exit_lite_decl;
static GTY (()) tree landed_decl;
static GTY (()) tree register_decl;
static GTY (()) tree cur_var; /* PERFGROUP_TLS_CUR */

const struct ggc_root_tab abi_tree_roots[] = {
  { &site_type, 1, sizeof (site_type), &gt_ggc_mx_tree_node, &gt_pch_nx_tree_node },
  { &enter_decl, 1, sizeof (enter_decl), &gt_ggc_mx_tree_node, &gt_pch_nx_tree_node },
  { &exit_decl, 1, sizeof (exit_decl), &gt_ggc_mx_tree_node, &gt_pch_nx_tree_node },
  { &exit_lite_decl, 1, sizeof (exit_lite_decl), &gt_ggc_mx_tree_node, &gt_pch_nx_tree_node },
  { &landed_decl, 1, sizeof (landed_decl), &gt_ggc_mx_tree_node, &gt_pch_nx_tree_node },
  { &register_decl, 1, sizeof (register_decl), &gt_ggc_mx_tree_node, &gt_pch_nx_tree_node },
  { &cur_var, 1, sizeof (cur_var), &gt_ggc_mx_tree_node, &gt_pch_nx_tree_node },
  LAST_GGC_ROOT_TAB
};

/* An external C function: its assembler name is set here, or cc1plus would mangle it. */
static tree
extern_c_function (const char *name, tree type)
{
  tree decl = build_fn_decl (name, type);
  SET_DECL_ASSEMBLER_NAME (decl, get_identifier (name));
  TREE_NOTHROW (decl) = 1;
  /* The hooks never call back into this translation unit. */
  DECL_ATTRIBUTES (decl) = tree_cons (get_identifier ("leaf"), NULL_TREE, NULL_TREE);
  /* weak-hooks: an object links without the runtime (a build helper linked without LIBS);
   * every call is guarded by `&hook != 0` (docs/plugins.md, "Linking without the runtime"). */
  if (weak_hooks)
    declare_weak (decl);
  return decl;
}

/* if (A CODE B) { CALL } as high GIMPLE: A and B gimple values. */
static void
add_call_if (gimple_seq *seq, enum tree_code code, tree a, tree b, gimple *call)
{
  tree yes = create_artificial_label (UNKNOWN_LOCATION);
  tree no = create_artificial_label (UNKNOWN_LOCATION);
  gimple_seq_add_stmt (seq, gimple_build_cond (code, a, b, yes, no));
  gimple_seq_add_stmt (seq, gimple_build_label (yes));
  gimple_seq_add_stmt (seq, call);
  gimple_seq_add_stmt (seq, gimple_build_label (no));
}

static tree site_field (const char *name);

/* TMP = REF, a new temporary of REF's type. */
static tree
load_tmp (gimple_seq *seq, tree ref, const char *name)
{
  tree tmp = create_tmp_var (TYPE_MAIN_VARIANT (TREE_TYPE (ref)), name);
  gimple_seq_add_stmt (seq, gimple_build_assign (tmp, ref));
  return tmp;
}

/*
 * tok = 0; if ((site.key | cur.mask) != ~0 || CFA > cur.sp) tok = enter (&site); — the
 * inline re-entry check of abi.h: a call of a function whose active groups all run already,
 * below the innermost frame that started one, makes no call at all. With weak-hooks, tok = 0; if (&enter)
 * tok = enter (&site) instead (without the runtime the thread-local does not exist).
 */
/* The saved re-entry state of each token's lite frames (tok -> mask, sp temporaries). */
struct lite_saves { tree tok, mask, sp, top; };
static vec<lite_saves> lite_saved;

/* A saved-state slot: a volatile local, in the frame's memory, never a register. Stored only
 * where a lite frame begins and loaded only where one ends, so nothing of it is live across
 * the body in a register: as temporaries, the mask, the sp and the top read by the check
 * (and the thread pointer's offset) stayed in callee-saved registers through every call,
 * re-entries too — four more pushes and pops in each small function than ABI 2's check
 * (Lua's luaH_getshortstr: 6 against 2; plain has none). */
static tree
saved_slot (tree type, const char *name)
{
  tree v = create_tmp_var (build_qualified_type (type, TYPE_QUAL_VOLATILE), name);
  TREE_THIS_VOLATILE (v) = 1;
  TREE_SIDE_EFFECTS (v) = 1;
  TREE_ADDRESSABLE (v) = 1;
  /* set wherever the token becomes LITE, read only where it is: GCC cannot see that */
  TREE_NO_WARNING (v) = 1;
  return v;
}

/* TOK's saved-state slots, made at the first of add_enter or add_exit to ask. */
static lite_saves &
lite_saves_of (tree tok)
{
  for (lite_saves &l : lite_saved)
    if (l.tok == tok)
      return l;
  lite_saved.safe_push ({ tok, saved_slot (uint64_type_node, "perfgroup_smask"),
                          saved_slot (pointer_sized_int_node, "perfgroup_ssp"),
                          saved_slot (uint64_type_node, "perfgroup_stop") });
  return lite_saved.last ();
}

/* A new function: no token of an earlier one is asked for again (their trees may be freed). */
void
lite_saves_reset (void)
{
  lite_saved.truncate (0);
}

static tree
cur_field (int i)
{
  tree f = TYPE_FIELDS (TREE_TYPE (cur_var)); /* mask, sp, ctl, top */
  while (i-- > 0)
    f = DECL_CHAIN (f);
  return build3 (COMPONENT_REF, TREE_TYPE (f), cur_var, f, NULL_TREE);
}

/* The thread's lite control words (cur.ctl: never NULL) and its countdown, ctl->left. */
static tree
lite_left (gimple_seq *seq, tree *ctl)
{
  *ctl = load_tmp (seq, cur_field (2), "perfgroup_ctl");
  return load_tmp (seq, build2 (MEM_REF, uint64_type_node, *ctl,
                                build_int_cst (TREE_TYPE (*ctl), 0)), "perfgroup_left");
}

static tree
left_ref (tree ctl)
{
  return build2 (MEM_REF, uint64_type_node, ctl, build_int_cst (TREE_TYPE (ctl), 0));
}

static tree
tmp_assign (gimple_seq *seq, tree type, const char *name, enum tree_code code, tree a, tree b)
{
  tree t = create_tmp_var (type, name);
  gimple_seq_add_stmt (seq, b ? gimple_build_assign (t, code, a, b) : gimple_build_assign (t, code, a));
  return t;
}

void
add_enter (gimple_seq *seq, tree site, tree tok, gcall *enter, bool check)
{
  gimple_seq_add_stmt (seq, gimple_build_assign (tok, build_int_cst (uint64_type_node, 0)));
  if (weak_hooks)
    {
      add_call_if (seq, NE_EXPR, build_fold_addr_expr (enter_decl), null_pointer_node, enter);
      return;
    }
  if (!check)
    {
      /* the hook never returns the LITE token: the exit never reads the saved state */
      gimple_seq_add_stmt (seq, enter);
      return;
    }
  lite_saves &ls = lite_saves_of (tok);
  tree smask = ls.mask, ssp = ls.sp, stop = ls.top;
  tree call = create_artificial_label (UNKNOWN_LOCATION);
  tree check_sp = create_artificial_label (UNKNOWN_LOCATION);
  tree notre = create_artificial_label (UNKNOWN_LOCATION);
  tree lite1 = create_artificial_label (UNKNOWN_LOCATION);
  tree lite2 = create_artificial_label (UNKNOWN_LOCATION);
  tree lite3 = create_artificial_label (UNKNOWN_LOCATION);
  tree done = create_artificial_label (UNKNOWN_LOCATION);
  tree key = load_tmp (seq, build3 (COMPONENT_REF, uint64_type_node, site, site_field ("key"),
                                    NULL_TREE), "perfgroup_key");
  tree mask = load_tmp (seq, cur_field (0), "perfgroup_cur_mask");
  tree both = create_tmp_var (uint64_type_node, "perfgroup_both");
  gimple_seq_add_stmt (seq, gimple_build_assign (both, BIT_IOR_EXPR, key, mask));
  tree cfa = create_tmp_var (ptr_type_node, "perfgroup_cfa");
  gcall *get_cfa = gimple_build_call (builtin_decl_explicit (BUILT_IN_DWARF_CFA), 0);
  gimple_call_set_lhs (get_cfa, cfa);
  gimple_call_set_nothrow (get_cfa, true);
  gimple_seq_add_stmt (seq, get_cfa);
  tree at = create_tmp_var (pointer_sized_int_node, "perfgroup_at");
  gimple_seq_add_stmt (seq, gimple_build_assign (at, NOP_EXPR, cfa));
  tree csp = load_tmp (seq, cur_field (1), "perfgroup_cur_sp");
  gimple_seq_add_stmt (seq, gimple_build_cond (NE_EXPR, both,
                                               build_all_ones_cst (uint64_type_node), notre,
                                               check_sp));
  gimple_seq_add_stmt (seq, gimple_build_label (check_sp));
  gimple_seq_add_stmt (seq, gimple_build_cond (GT_EXPR, at, csp, call, done));
  /* not a re-entry: a lite frame if the thread has lite transitions left, the call is below
   * the innermost frame, and exactly one group starts */
  gimple_seq_add_stmt (seq, gimple_build_label (notre));
  /* In that order (abi.h): exactly one group starts and it has a bit (not bit 63: a key of 0,
   * as emitted, never makes a lite frame), the call is below the innermost frame, and only
   * then ctl: a module whose keys stay 0 (refused by a runtime of ABI 2, whose cur is 16
   * bytes) never reads past cur.sp. */
  tree s = tmp_assign (seq, uint64_type_node, "perfgroup_s", BIT_NOT_EXPR, both, NULL_TREE);
  tree s1 = tmp_assign (seq, uint64_type_node, "perfgroup_s1", MINUS_EXPR, s,
                        build_int_cst (uint64_type_node, 1));
  tree s2 = tmp_assign (seq, uint64_type_node, "perfgroup_s2", BIT_AND_EXPR, s, s1);
  tree lite0 = create_artificial_label (UNKNOWN_LOCATION);
  gimple_seq_add_stmt (seq, gimple_build_cond (NE_EXPR, s2, build_int_cst (uint64_type_node, 0),
                                               call, lite0));
  gimple_seq_add_stmt (seq, gimple_build_label (lite0));
  gimple_seq_add_stmt (seq, gimple_build_cond (GE_EXPR, s,
                                               build_int_cst (uint64_type_node,
                                                              PERFGROUP_TOKEN_LITE),
                                               call, lite1));
  gimple_seq_add_stmt (seq, gimple_build_label (lite1));
  gimple_seq_add_stmt (seq, gimple_build_cond (GT_EXPR, at, csp, call, lite2));
  gimple_seq_add_stmt (seq, gimple_build_label (lite2));
  tree ctl;
  tree left = lite_left (seq, &ctl);
  gimple_seq_add_stmt (seq, gimple_build_cond (GT_EXPR, left, build_int_cst (uint64_type_node, 1),
                                               lite3, call));
  gimple_seq_add_stmt (seq, gimple_build_label (lite3));
  gimple_seq_add_stmt (seq, gimple_build_assign (smask, mask));
  gimple_seq_add_stmt (seq, gimple_build_assign (ssp, csp));
  gimple_seq_add_stmt (seq, gimple_build_assign (stop, load_tmp (seq, cur_field (3), "perfgroup_top")));
  tree left1 = tmp_assign (seq, uint64_type_node, "perfgroup_left1", MINUS_EXPR, left,
                           build_int_cst (uint64_type_node, 1));
  gimple_seq_add_stmt (seq, gimple_build_assign (left_ref (ctl), left1));
  gimple_seq_add_stmt (seq, gimple_build_assign (cur_field (1), at));
  tree nmask = tmp_assign (seq, uint64_type_node, "perfgroup_nmask", BIT_IOR_EXPR, mask, s);
  gimple_seq_add_stmt (seq, gimple_build_assign (cur_field (0), nmask));
  tree idx = create_tmp_var (integer_type_node, "perfgroup_idx");
  gcall *ctz = gimple_build_call (builtin_decl_explicit (BUILT_IN_CTZLL), 1, s);
  gimple_call_set_lhs (ctz, idx);
  gimple_seq_add_stmt (seq, ctz);
  tree idxs = tmp_assign (seq, sizetype, "perfgroup_idxs", NOP_EXPR, idx, NULL_TREE);
  tree idxu = tmp_assign (seq, uint64_type_node, "perfgroup_idxu", NOP_EXPR, idx, NULL_TREE);
  gimple_seq_add_stmt (seq, gimple_build_assign (cur_field (3), idxu));
  /* ctl->acts[idx]: at 8 + 4 idx */
  tree off = tmp_assign (seq, sizetype, "perfgroup_off", MULT_EXPR, idxs, size_int (4));
  tree p = tmp_assign (seq, TREE_TYPE (ctl), "perfgroup_p", POINTER_PLUS_EXPR, ctl, off);
  tree ref = build2 (MEM_REF, unsigned_type_node, p,
                     build_int_cst (build_pointer_type (unsigned_type_node), 8));
  tree v = load_tmp (seq, ref, "perfgroup_v");
  tree v1 = tmp_assign (seq, unsigned_type_node, "perfgroup_v1", PLUS_EXPR, v,
                        build_int_cst (unsigned_type_node, 1));
  gimple_seq_add_stmt (seq, gimple_build_assign (unshare_expr (ref), v1));
  gimple_seq_add_stmt (seq, gimple_build_assign (tok, build_int_cst (uint64_type_node,
                                                                     PERFGROUP_TOKEN_LITE)));
  gimple_seq_add_stmt (seq, gimple_build_goto (done));
  gimple_seq_add_stmt (seq, gimple_build_label (call));
  gimple_seq_add_stmt (seq, enter);
  gimple_seq_add_stmt (seq, gimple_build_label (done));
}

/* if (tok != 0) exit (&site, tok); — the exit hook only ever gets a token (abi.h); a lite
 * frame's token restores the saved state inline. */
void
add_exit (gimple_seq *seq, tree tok, gcall *leave)
{
  if (weak_hooks)
    {
      add_call_if (seq, NE_EXPR, tok, build_int_cst (uint64_type_node, 0), leave);
      return;
    }
  lite_saves &ls = lite_saves_of (tok);
  tree some = create_artificial_label (UNKNOWN_LOCATION);
  tree fast = create_artificial_label (UNKNOWN_LOCATION);
  tree slow = create_artificial_label (UNKNOWN_LOCATION);
  tree lite = create_artificial_label (UNKNOWN_LOCATION);
  tree hook = create_artificial_label (UNKNOWN_LOCATION);
  tree done = create_artificial_label (UNKNOWN_LOCATION);
  gimple_seq_add_stmt (seq, gimple_build_cond (NE_EXPR, tok, build_int_cst (uint64_type_node, 0),
                                               some, done));
  gimple_seq_add_stmt (seq, gimple_build_label (some));
  gimple_seq_add_stmt (seq, gimple_build_cond (EQ_EXPR, tok,
                                               build_int_cst (uint64_type_node, PERFGROUP_TOKEN_LITE),
                                               lite, hook));
  gimple_seq_add_stmt (seq, gimple_build_label (lite));
  /* the saved state out of its slots (memory: loaded into registers here) */
  tree smask = load_tmp (seq, ls.mask, "perfgroup_smask_v");
  tree ssp = load_tmp (seq, ls.sp, "perfgroup_ssp_v");
  tree stop = load_tmp (seq, ls.top, "perfgroup_stop_v");
  tree ctl;
  tree left = lite_left (seq, &ctl);
  gimple_seq_add_stmt (seq, gimple_build_cond (GT_EXPR, left, build_int_cst (uint64_type_node, 1),
                                               fast, slow));
  gimple_seq_add_stmt (seq, gimple_build_label (fast));
  tree left1 = tmp_assign (seq, uint64_type_node, "perfgroup_left1", MINUS_EXPR, left,
                           build_int_cst (uint64_type_node, 1));
  gimple_seq_add_stmt (seq, gimple_build_assign (left_ref (ctl), left1));
  gimple_seq_add_stmt (seq, gimple_build_assign (cur_field (3), stop));
  gimple_seq_add_stmt (seq, gimple_build_assign (cur_field (0), smask));
  gimple_seq_add_stmt (seq, gimple_build_assign (cur_field (1), ssp));
  gimple_seq_add_stmt (seq, gimple_build_goto (done));
  gimple_seq_add_stmt (seq, gimple_build_label (slow));
  gcall *el = gimple_build_call (exit_lite_decl, 4, unshare_expr (gimple_call_arg (leave, 0)), smask, ssp, stop);
  gimple_set_location (el, gimple_location (leave));
  gimple_seq_add_stmt (seq, el);
  gimple_seq_add_stmt (seq, gimple_build_goto (done));
  gimple_seq_add_stmt (seq, gimple_build_label (hook));
  gimple_seq_add_stmt (seq, leave);
  gimple_seq_add_stmt (seq, gimple_build_label (done));
}

static tree
add_field (tree chain, const char *name, tree type)
{
  tree f = build_decl (BUILTINS_LOCATION, FIELD_DECL, get_identifier (name), type);
  DECL_CHAIN (f) = chain;
  return f;
}

void
build_abi_trees (void)
{
  if (site_type)
    return;
  tree cstr = build_pointer_type (build_qualified_type (char_type_node, TYPE_QUAL_CONST));
  /* struct perfgroup_site of abi.h; finish_builtin_struct wants the fields last to first. */
  tree fields = NULL_TREE;
  fields = add_field (fields, "version", short_unsigned_type_node);
  fields = add_field (fields, "flags", short_unsigned_type_node);
  fields = add_field (fields, "line", unsigned_type_node);
  fields = add_field (fields, "groups", cstr);
  fields = add_field (fields, "where", cstr);
  fields = add_field (fields, "cache", ptr_type_node);
  fields = add_field (fields, "key", uint64_type_node);
  site_type = make_node (RECORD_TYPE);
  finish_builtin_struct (site_type, "perfgroup_site", fields, NULL_TREE);
  gcc_assert (tree_to_uhwi (TYPE_SIZE_UNIT (site_type)) == sizeof (struct perfgroup_site));

  /* extern __thread struct perfgroup_cur PERFGROUP_TLS_CUR, initial-exec (abi.h) */
  tree cur_fields = NULL_TREE;
  cur_fields = add_field (cur_fields, "mask", uint64_type_node);
  cur_fields = add_field (cur_fields, "sp", pointer_sized_int_node);
  cur_fields = add_field (cur_fields, "ctl", build_pointer_type (uint64_type_node));
  cur_fields = add_field (cur_fields, "top", uint64_type_node);
  tree cur_type = make_node (RECORD_TYPE);
  finish_builtin_struct (cur_type, "perfgroup_cur", cur_fields, NULL_TREE);
  gcc_assert (tree_to_uhwi (TYPE_SIZE_UNIT (cur_type)) == sizeof (struct perfgroup_cur));
  cur_var = build_decl (BUILTINS_LOCATION, VAR_DECL, get_identifier (PERFGROUP_TLS_CUR_NAME),
                        cur_type);
  SET_DECL_ASSEMBLER_NAME (cur_var, DECL_NAME (cur_var));
  TREE_PUBLIC (cur_var) = 1;
  DECL_EXTERNAL (cur_var) = 1;
  DECL_ARTIFICIAL (cur_var) = 1;
  TREE_STATIC (cur_var) = 1;
  set_decl_tls_model (cur_var, TLS_MODEL_INITIAL_EXEC);

  enter_decl = extern_c_function (PERFGROUP_HOOK_ENTER_NAME,
                                  build_function_type_list (uint64_type_node, ptr_type_node,
                                                            NULL_TREE));
  exit_decl = extern_c_function (PERFGROUP_HOOK_EXIT_NAME,
                                 build_function_type_list (void_type_node, ptr_type_node,
                                                           uint64_type_node, NULL_TREE));
  exit_lite_decl = extern_c_function (PERFGROUP_HOOK_EXIT_LITE_NAME,
                                      build_function_type_list (void_type_node, ptr_type_node,
                                                                uint64_type_node,
                                                                pointer_sized_int_node,
                                                                uint64_type_node, NULL_TREE));
  /* Weak (abi.h): a module of ABI 3 links and loads with a runtime of ABI 2, which refuses it
   * at its registration; only a lite frame calls it, and none is made in a refused module. */
  if (!weak_hooks)
    declare_weak (exit_lite_decl);
  /* Weak always (abi.h): every call is guarded, and a unit without a group references it */
  landed_decl = extern_c_function (PERFGROUP_HOOK_LANDED_NAME,
                                   build_function_type_list (void_type_node, NULL_TREE));
  if (!weak_hooks)
    declare_weak (landed_decl);
  register_decl = extern_c_function (PERFGROUP_MODULE_REGISTER_NAME,
                                     build_function_type_list (void_type_node,
                                                               unsigned_type_node, ptr_type_node,
                                                               ptr_type_node, NULL_TREE));
}

/* "a\0b\0" as a constant of the field type (const char *). */
static tree
two_strings (const char *a, const char *b)
{
  size_t la = strlen (a), lb = strlen (b);
  char *buf = XNEWVEC (char, la + lb + 2);
  memcpy (buf, a, la + 1);
  memcpy (buf + la + 1, b, lb + 1);
  tree s = build_string_literal (la + lb + 2, buf);
  XDELETEVEC (buf);
  return s;
}

static tree
site_field (const char *name)
{
  for (tree f = TYPE_FIELDS (site_type); f; f = DECL_CHAIN (f))
    if (!strcmp (IDENTIFIER_POINTER (DECL_NAME (f)), name))
      return f;
  gcc_unreachable ();
}

/* The ABI version this unit's sites and constructor say (abi.h): 3 where add_enter may make
 * lite frames, 2 with weak-hooks (ABI 2's sequence exactly: no lite frame, no reference to
 * the lite exit). */
static unsigned
emitted_abi (void)
{
  return weak_hooks ? PERFGROUP_ABI_VERSION_NO_LITE : PERFGROUP_ABI_VERSION;
}

/* A site's initializer: FNDECL's version, flags (plus EXTRA), line, groups, where; CACHE. */
static tree
site_init (tree fndecl, const char *attr, const char *file, unsigned extra, tree cache)
{
  const char *fn = asm_name (fndecl);
  unsigned flags = PERFGROUP_SITE_F_GCC | extra;
  if (!strncmp (fn, "_Z", 2))
    flags |= PERFGROUP_SITE_F_CXX;
  if (DECL_DECLARED_INLINE_P (fndecl) || DECL_COMDAT (fndecl) || DECL_ONE_ONLY (fndecl))
    flags |= PERFGROUP_SITE_F_INLINE;
  if (attr)
    flags |= PERFGROUP_SITE_F_ATTR;
  if (file)
    flags |= PERFGROUP_SITE_F_FILEGROUP;

  vec<constructor_elt, va_gc> *v = NULL;
  CONSTRUCTOR_APPEND_ELT (v, site_field ("version"),
                          build_int_cst (short_unsigned_type_node, emitted_abi ()));
  CONSTRUCTOR_APPEND_ELT (v, site_field ("flags"), build_int_cst (short_unsigned_type_node, flags));
  CONSTRUCTOR_APPEND_ELT (v, site_field ("line"),
                          build_int_cst (unsigned_type_node, DECL_SOURCE_LINE (fndecl)));
  CONSTRUCTOR_APPEND_ELT (v, site_field ("groups"), two_strings (attr ? attr : "", file ? file : ""));
  /* Function multiversioning: a C++ target("avx2") version is named _Z4kindv.avx2; the
   * site shows every version under the function's own name, as perfgroup-clang does
   * (target_clones are cloned after this pass and share one site anyway). */
  const char *shown = fn;
  if (DECL_FUNCTION_VERSIONED (fndecl) && strchr (fn, '.'))
    shown = xstrndup (fn, strchr (fn, '.') - fn);
  CONSTRUCTOR_APPEND_ELT (v, site_field ("where"),
                          two_strings (shown, DECL_SOURCE_FILE (fndecl) ? DECL_SOURCE_FILE (fndecl) : ""));
  CONSTRUCTOR_APPEND_ELT (v, site_field ("cache"), cache);
  CONSTRUCTOR_APPEND_ELT (v, site_field ("key"), build_int_cst (uint64_type_node, 0));
  tree init = build_constructor (site_type, v);
  TREE_CONSTANT (init) = 1;
  TREE_STATIC (init) = 1;
  return init;
}

/* A static, writable, kept site variable PREFIX<asm name of FNDECL> holding INIT. */
static tree
site_var (const char *prefix, tree fndecl, tree init)
{
  char *name = concat (prefix, asm_name (fndecl), NULL);
  tree var = build_decl (DECL_SOURCE_LOCATION (fndecl), VAR_DECL, get_identifier (name), site_type);
  free (name);
  SET_DECL_ASSEMBLER_NAME (var, DECL_NAME (var));
  TREE_STATIC (var) = 1;
  TREE_PUBLIC (var) = 0;
  TREE_ADDRESSABLE (var) = 1;
  TREE_USED (var) = 1;
  DECL_ARTIFICIAL (var) = 1;
  DECL_IGNORED_P (var) = 1;
  /* Keep the site even if every call of the function is inlined and the body dropped: the
   * section then always exists when the module constructor references its bounds. */
  DECL_PRESERVE_P (var) = 1;
  /* Exactly 8: without DECL_USER_ALIGN GCC raises the alignment of statics of 32 bytes or
   * more (a site has 40) to 32 and the section stops being a dense array. */
  SET_DECL_ALIGN (var, 64);
  DECL_USER_ALIGN (var) = 1;
  DECL_INITIAL (var) = init;
  return var;
}

/* The static descriptor of FNDECL, placed in PERFGROUP_SITES_SECTION. A COMDAT function's
 * (inline, template: emitted by every unit that uses it) is a hidden COMDAT variable of its
 * own instead, outside the section, so the module keeps one whichever units emit the function
 * (as perfgroup-clang's); the unit's section gets an entry pointing at it
 * (PERFGROUP_SITE_F_INDIRECT, abi.h), which the runtime registers it by. It cannot go in the
 * section: GCC keys named sections by name, so every COMDAT variable of a unit in one named
 * section lands in the COMDAT group of the first one (two units with different sets of inline
 * functions then define the same site twice: corpus comdat_sets.cc), and refuses a COMDAT
 * and a plain variable in one named section ("section type conflict"). Not in the function's
 * group either: a unit that inlined every call emits the site without the function. */
tree
build_site (tree fndecl, const char *attr, const char *file)
{
  tree var = site_var ("__perfgroup_site_", fndecl, site_init (fndecl, attr, file, 0, null_pointer_node));
  if (!(TREE_PUBLIC (fndecl) && (DECL_COMDAT (fndecl) || DECL_ONE_ONLY (fndecl))))
    {
      set_decl_section_name (var, PERFGROUP_SITES_SECTION);
      varpool_node::finalize_decl (var);
      return var;
    }
  TREE_PUBLIC (var) = 1;
  DECL_VISIBILITY (var) = VISIBILITY_HIDDEN;
  DECL_VISIBILITY_SPECIFIED (var) = 1;
  make_decl_one_only (var, DECL_ASSEMBLER_NAME (var)); /* after DECL_INITIAL: not common */
  varpool_node::finalize_decl (var);
  tree entry = site_var ("__perfgroup_isite_", fndecl,
                         site_init (fndecl, attr, file, PERFGROUP_SITE_F_INDIRECT,
                                    build_fold_addr_expr_with_type (var, ptr_type_node)));
  set_decl_section_name (entry, PERFGROUP_SITES_SECTION);
  varpool_node::finalize_decl (entry);
  return var;
}

static tree
extern_hidden_site_symbol (const char *name)
{
  tree var = build_decl (BUILTINS_LOCATION, VAR_DECL, get_identifier (name), site_type);
  SET_DECL_ASSEMBLER_NAME (var, DECL_NAME (var));
  TREE_PUBLIC (var) = 1;
  DECL_EXTERNAL (var) = 1;
  DECL_ARTIFICIAL (var) = 1;
  TREE_ADDRESSABLE (var) = 1;
  /* Hidden: the linker defines it per module, it must never bind to another module's. */
  DECL_VISIBILITY (var) = VISIBILITY_HIDDEN;
  DECL_VISIBILITY_SPECIFIED (var) = 1;
  return var;
}

/* Once per translation unit that has a site: a constructor registering the module's sites. */
void
emit_module_constructor (void)
{
  static bool done;
  if (done)
    return;
  done = true;
  tree start = extern_hidden_site_symbol (PERFGROUP_SITES_START_NAME);
  tree stop = extern_hidden_site_symbol (PERFGROUP_SITES_STOP_NAME);
  tree call = build_call_expr (register_decl, 3,
                               build_int_cst (unsigned_type_node, emitted_abi ()),
                               build_fold_addr_expr_with_type (start, ptr_type_node),
                               build_fold_addr_expr_with_type (stop, ptr_type_node));
  tree body = NULL_TREE;
  if (weak_hooks)
    call = build3 (COND_EXPR, void_type_node,
                   build2 (NE_EXPR, boolean_type_node, build_fold_addr_expr (register_decl),
                           null_pointer_node),
                   call, NULL_TREE);
  append_to_statement_list (call, &body);

  /* What cgraph_build_static_cdtor does, with the ABI's name for the function. It stays local
   * to the translation unit: every TU's .init_array entry would call it anyway, so a weak or
   * COMDAT copy would save only bytes, and LTO merges all the constructors into one. */
  function *saved_fun = cfun; /* we are inside the pass of another function */
  tree saved_decl = current_function_decl;
  tree fn = build_decl (BUILTINS_LOCATION, FUNCTION_DECL, get_identifier (PERFGROUP_MODULE_CTOR_NAME),
                        build_function_type_list (void_type_node, NULL_TREE));
  SET_DECL_ASSEMBLER_NAME (fn, DECL_NAME (fn));
  tree result = build_decl (BUILTINS_LOCATION, RESULT_DECL, NULL_TREE, void_type_node);
  DECL_ARTIFICIAL (result) = 1;
  DECL_CONTEXT (result) = fn;
  DECL_RESULT (fn) = result;
  current_function_decl = fn;
  allocate_struct_function (fn, false);
  TREE_STATIC (fn) = 1;
  TREE_USED (fn) = 1;
  DECL_ARTIFICIAL (fn) = 1;
  DECL_IGNORED_P (fn) = 1;
  DECL_UNINLINABLE (fn) = 1;
  DECL_NO_INSTRUMENT_FUNCTION_ENTRY_EXIT (fn) = 1;
  DECL_FUNCTION_SPECIFIC_OPTIMIZATION (fn) = optimization_default_node;
  DECL_FUNCTION_SPECIFIC_TARGET (fn) = target_option_default_node;
  DECL_SAVED_TREE (fn) = body;
  DECL_INITIAL (fn) = make_node (BLOCK);
  BLOCK_SUPERCONTEXT (DECL_INITIAL (fn)) = fn;
  TREE_USED (DECL_INITIAL (fn)) = 1;
  /* Priority 101, the first one open to programs: sites are known before ordinary
   * constructors run instrumented code (the runtime copes with either order). */
  DECL_STATIC_CONSTRUCTOR (fn) = 1;
  decl_init_priority_insert (fn, MAX_RESERVED_INIT_PRIORITY + 1);
  gimplify_function_tree (fn);
  cgraph_node::add_new_function (fn, false);
  set_cfun (saved_fun);
  current_function_decl = saved_decl;
}

/* tok = __perfgroup_enter (&site) at IN, and __perfgroup_exit (&site, tok) at OUT. */
void
build_hook_calls (tree site, tree tok, location_t in, location_t out, gcall **enter, gcall **leave)
{
  *enter = gimple_build_call (enter_decl, 1, build_fold_addr_expr_with_type (site, ptr_type_node));
  gimple_call_set_lhs (*enter, tok);
  gimple_set_location (*enter, in);
  *leave = build_exit_call (site, tok, out);
}

/* __perfgroup_exit (&site, tok) at LOC. */
gcall *
build_exit_call (tree site, tree tok, location_t loc)
{
  gcall *leave = gimple_build_call (exit_decl, 2,
                                    build_fold_addr_expr_with_type (site, ptr_type_node), tok);
  gimple_set_location (leave, loc);
  return leave;
}

/* tok = 0; if (<not a re-entry>) tok = enter(&site); try { BODY } finally { if (tok) exit(&site, tok); }
 * (add_enter, add_exit; weak-hooks: if (&enter) tok = enter(&site)). END_TRANSFERS: FUN is a
 * coroutine's actor, whose runs may end in a symmetric transfer (coroutines.cc's, passed by
 * the caller: this file builds, it does not call up). */
void
wrap_body (function *fun, tree site, transfers_fn end_transfers)
{
  tree fndecl = fun->decl;
  lite_saves_reset ();
  tree tok = create_tmp_var (uint64_type_node, "perfgroup_tok");
  gcall *enter, *leave;
  build_hook_calls (site, tok, DECL_SOURCE_LOCATION (fndecl), fun->function_end_locus, &enter,
                    &leave);

  tree done = NULL_TREE; /* perfgroup_transferred: the run ended in a transfer */
  unsigned transfers = end_transfers ? end_transfers (fndecl, site, tok, &done) : 0;
  gimple_seq cleanup = NULL;
  tree skip = NULL_TREE;
  if (transfers)
    { /* if (!perfgroup_transferred) exit (...) */
      tree yes = create_artificial_label (UNKNOWN_LOCATION);
      skip = create_artificial_label (UNKNOWN_LOCATION);
      gimple_seq_add_stmt (&cleanup, gimple_build_cond (EQ_EXPR, done, boolean_false_node,
                                                        yes, skip));
      gimple_seq_add_stmt (&cleanup, gimple_build_label (yes));
    }
  add_exit (&cleanup, tok, leave);
  if (skip)
    gimple_seq_add_stmt (&cleanup, gimple_build_label (skip));
  gtry *tf = gimple_build_try (gimple_body (fndecl), cleanup, GIMPLE_TRY_FINALLY);
  gimple_seq seq = NULL;
  if (transfers)
    gimple_seq_add_stmt (&seq, gimple_build_assign (done, boolean_false_node));
  add_enter (&seq, site, tok, enter);
  gimple_seq_add_stmt (&seq, tf);
  gbind *bind = gimple_build_bind (NULL_TREE, seq, NULL_TREE);
  gimple_seq body = NULL;
  gimple_seq_add_stmt (&body, bind); /* "lower" wants exactly one GIMPLE_BIND */
  gimple_set_body (fndecl, body);
}

/* Is STMT a call of setjmp or one of its kin (returns twice, named *setjmp*: not vfork, nor
 * getcontext, whose second return may be on another stack)? */
static bool
is_setjmp_call (gimple *stmt)
{
  if (!is_gimple_call (stmt) || !(gimple_call_flags (stmt) & ECF_RETURNS_TWICE))
    return false;
  tree fn = gimple_call_fndecl (stmt);
  return fn && DECL_NAME (fn) && strstr (IDENTIFIER_POINTER (DECL_NAME (fn)), "setjmp");
}

static tree
land_after_setjmp (gimple_stmt_iterator *gsi, bool *handled, struct walk_stmt_info *wi)
{
  *handled = false;
  gimple *stmt = gsi_stmt (*gsi);
  if (!is_setjmp_call (stmt))
    return NULL_TREE;
  gimple_seq seq = NULL;
  gcall *call = gimple_build_call (landed_decl, 0);
  gimple_set_location (call, gimple_location (stmt));
  add_call_if (&seq, NE_EXPR, build_fold_addr_expr (landed_decl), null_pointer_node, call);
  gsi_insert_seq_after (gsi, seq, GSI_CONTINUE_LINKING);
  (*(unsigned *) wi->info)++;
  return NULL_TREE;
}

/* if (&__perfgroup_landed) __perfgroup_landed (); after every setjmp call of FUN's body
 * (abi.h, PERFGROUP_HOOK_LANDED): where a longjmp lands, the runtime drops the frames it
 * skipped at once. Every function of the unit but a naked one, instrumented or not (the
 * landing function is often a plain one: Lua's luaD_rawrunprotected), PERF_GROUP_NONE
 * (no_instrument_function) too: the call keeps the runtime's view of the stack true, it
 * measures nothing. Returns how many. */
unsigned
add_landings (function *fun)
{
  tree fndecl = fun->decl;
  if (!gimple_body (fndecl) || lookup_attribute ("naked", DECL_ATTRIBUTES (fndecl)))
    return 0;
  unsigned n = 0;
  build_abi_trees ();
  struct walk_stmt_info wi;
  memset (&wi, 0, sizeof wi);
  wi.info = &n;
  gimple_seq body = gimple_body (fndecl);
  walk_gimple_seq_mod (&body, land_after_setjmp, NULL, &wi);
  gimple_set_body (fndecl, body);
  return n;
}

/* Is STMT the enter or an exit call of SITE? */
bool
is_hook_call_of (gimple *stmt, tree site)
{
  if (!is_gimple_call (stmt))
    return false;
  tree fn = gimple_call_fndecl (stmt);
  if (fn != enter_decl && fn != exit_decl && fn != exit_lite_decl)
    return false;
  tree arg = gimple_call_arg (stmt, 0);
  STRIP_NOPS (arg);
  return TREE_CODE (arg) == ADDR_EXPR && TREE_OPERAND (arg, 0) == site;
}

/* Is T one of the temporaries add_enter, wrap_body and charge_omp_regions make (by name: create_tmp_var gives
 * "perfgroup_key.3")? ANY: the tokens too. */
bool
is_our_tmp (tree t, bool any)
{
  static const char *const loads[] = { "perfgroup_key", "perfgroup_cur_mask", "perfgroup_both",
                                       "perfgroup_cfa", "perfgroup_at", "perfgroup_cur_sp",
                                       "perfgroup_left", "perfgroup_s", "perfgroup_s1", "perfgroup_s2",
                                       "perfgroup_left1", "perfgroup_nmask", "perfgroup_ctl",
                                       "perfgroup_idx", "perfgroup_idxs", "perfgroup_off",
                                       "perfgroup_p", "perfgroup_v", "perfgroup_v1",
                                       "perfgroup_smask", "perfgroup_ssp", "perfgroup_stop",
                                       "perfgroup_smask_v", "perfgroup_ssp_v", "perfgroup_stop_v",
                                       "perfgroup_top", "perfgroup_idxu" };
  static const char *const tokens[] = { "perfgroup_tok", "perfgroup_omp_tok" };
  if (!t || TREE_CODE (t) != VAR_DECL || !DECL_ARTIFICIAL (t) || !DECL_NAME (t))
    return false;
  const char *n = IDENTIFIER_POINTER (DECL_NAME (t));
  auto named = [n] (const char *p) { /* p, then the suffix create_tmp_var adds, or nothing */
    size_t l = strlen (p);
    return !strncmp (n, p, l) && !ISALNUM (n[l]) && n[l] != '_';
  };
  for (const char *p : loads)
    if (named (p))
      return true;
  if (any)
    for (const char *p : tokens)
      if (named (p))
        return true;
  return false;
}

/* Is STMT a store of a lite frame (into __perfgroup_cur, or an activation counter)? */
bool
is_our_store (gimple *stmt)
{
  if (!is_gimple_assign (stmt))
    return false;
  tree l = gimple_assign_lhs (stmt);
  if (TREE_CODE (l) == COMPONENT_REF && TREE_OPERAND (l, 0) == cur_var)
    return true;
  return TREE_CODE (l) == MEM_REF && is_our_tmp (TREE_OPERAND (l, 0), false);
}

} // namespace perfgroup_gcc
