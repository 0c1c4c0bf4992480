// queen.dedup_parse_query(text): read Flink's deduplication query shape with PostgreSQL's own
// parser (raw_parser; nothing is analysed or executed) and return the options it names:
//   SELECT <cols> FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY <key>
//                        ORDER BY <time> ASC|DESC) AS rn FROM <queue>) [AS t]
//   WHERE rn = 1 | rn <= 1 | rn < 2
// <time> is proctime() (order proctime) or a payload field (order rowtime, the field holding
// the event time). Shapes Flink plans as Top-N raise 0A000 saying so; anything else 22023.
#include "pg/common/glue.h"

extern "C" {
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "nodes/parsenodes.h"
#include "parser/parser.h"
#include "utils/json.h"
#include "utils/jsonb.h"
PG_FUNCTION_INFO_V1(queen_dedup_parse_query_v1);
}

namespace queen_pg {
namespace {

// A shape Flink plans as Top-N.
#define TOPN(...)                                                             \
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg(__VA_ARGS__), \
                    errhint("Deduplicate needs ROW_NUMBER() ordered by exactly one time "   \
                            "attribute (proctime() or a rowtime field) and rank 1.")))
// Not the deduplication shape at all.
#define NOT_DEDUP(...)                                                         \
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg(__VA_ARGS__),   \
                    errhint("Expected SELECT <cols> FROM (SELECT *, ROW_NUMBER() OVER "    \
                            "(PARTITION BY <key> ORDER BY <time> ASC|DESC) AS rn FROM "    \
                            "<queue>) WHERE rn = 1.")))

// The last name of a column reference, or nullptr (for `*` or anything else).
const char* column_name(Node* n) {
    if (n == nullptr || !IsA(n, ColumnRef)) return nullptr;
    ColumnRef* c = (ColumnRef*) n;
    Node* last = (Node*) llast(c->fields);
    return IsA(last, String) ? strVal(last) : nullptr;
}

// True for a column reference ending in `*`.
bool is_star(Node* n) {
    if (n == nullptr || !IsA(n, ColumnRef)) return false;
    return IsA((Node*) llast(((ColumnRef*) n)->fields), A_Star);
}

// The lower-case last name of a function call.
const char* func_name(FuncCall* f) { return strVal(llast(f->funcname)); }

// The integer of a constant, or false.
bool int_const(Node* n, long* out) {
    if (n == nullptr || !IsA(n, A_Const)) return false;
    A_Const* c = (A_Const*) n;
    if (c->isnull || !IsA(&c->val, Integer)) return false;
    *out = intVal(&c->val);
    return true;
}

// PostgreSQL 15's grammar insists on an alias for a FROM subquery; Flink's shape has none. The
// parser's error points at the subquery's '(' (1-based character position): return a copy of
// the query with " AS dedup_subquery" after the matching ')' (quotes skipped), or nullptr.
char* add_subquery_alias(const char* sql, int cursorpos) {
    int len = (int) strlen(sql);
    int at = 0;
    for (int chars = 1; chars < cursorpos && at < len; chars++) at += pg_mblen(sql + at);
    if (at >= len || sql[at] != '(') return nullptr;
    int depth = 0;
    for (int i = at; i < len; i++) {
        char c = sql[i];
        if (c == '\'' || c == '"') {
            for (i++; i < len && sql[i] != c; i++) {}
            continue;
        }
        if (c == '(') depth++;
        if (c == ')' && --depth == 0) {
            StringInfoData b;
            initStringInfo(&b);
            appendBinaryStringInfo(&b, sql, i + 1);
            appendStringInfoString(&b, " AS dedup_subquery");
            appendStringInfoString(&b, sql + i + 1);
            return b.data;
        }
    }
    return nullptr;
}

// raw_parser, retrying with aliases added to alias-less FROM subqueries.
List* parse_with_aliases(char* query) {
    char* volatile sql = query;
    for (volatile int attempt = 0;; attempt++) {
        MemoryContext mcx = CurrentMemoryContext;
        List* volatile result = NIL;
        char* volatile retry = nullptr;
        PG_TRY();
        {
            result = raw_parser(sql, RAW_PARSE_DEFAULT);
        }
        PG_CATCH();
        {
            MemoryContextSwitchTo(mcx);
            ErrorData* e = CopyErrorData();
            if (attempt < 8 && e->message != nullptr &&
                strcmp(e->message, "subquery in FROM must have an alias") == 0)
                // inside SPI the position arrives as an internal one (_SPI_error_callback)
                retry = add_subquery_alias(sql, e->cursorpos > 0 ? e->cursorpos : e->internalpos);
            if (retry == nullptr) PG_RE_THROW();
            FlushErrorState();
        }
        PG_END_TRY();
        if (retry == nullptr) return result;
        sql = retry;
    }
}

// Append a JSON string.
void json_str(StringInfo b, const char* s) { escape_json(b, s); }

}  // namespace
}  // namespace queen_pg

using namespace queen_pg;

// queen.dedup_parse_query(p_query): {"queue", "columns", "options": {key, order, keep, rowtime}}.
extern "C" Datum queen_dedup_parse_query_v1(PG_FUNCTION_ARGS) {
    char* sql = text_to_cstring(PG_GETARG_TEXT_PP(0));
    List* stmts = parse_with_aliases(sql);
    if (list_length(stmts) != 1) NOT_DEDUP("expected exactly one SELECT statement");
    Node* top = ((RawStmt*) linitial(stmts))->stmt;
    if (!IsA(top, SelectStmt)) NOT_DEDUP("expected a SELECT statement");
    SelectStmt* outer = (SelectStmt*) top;
    if (outer->op != SETOP_NONE || outer->valuesLists != NIL)
        NOT_DEDUP("set operations and VALUES are not a deduplication query");
    if (list_length(outer->fromClause) != 1 || !IsA(linitial(outer->fromClause), RangeSubselect))
        NOT_DEDUP("the FROM clause must be one subquery computing ROW_NUMBER()");
    if (outer->groupClause != NIL || outer->havingClause != nullptr || outer->sortClause != NIL ||
        outer->limitCount != nullptr || outer->limitOffset != nullptr ||
        outer->distinctClause != NIL || outer->windowClause != NIL)
        NOT_DEDUP("the outer query may only project columns and filter on the row number");
    SelectStmt* inner = (SelectStmt*) ((RangeSubselect*) linitial(outer->fromClause))->subquery;
    if (inner == nullptr || !IsA(inner, SelectStmt) || inner->op != SETOP_NONE)
        NOT_DEDUP("the subquery must be a plain SELECT");
    if (list_length(inner->fromClause) != 1 || !IsA(linitial(inner->fromClause), RangeVar))
        NOT_DEDUP("the subquery must read exactly one queue");
    if (inner->whereClause != nullptr || inner->groupClause != NIL || inner->sortClause != NIL ||
        inner->limitCount != nullptr || inner->distinctClause != NIL)
        NOT_DEDUP("the subquery may only select * and the row number");
    const char* queue = ((RangeVar*) linitial(inner->fromClause))->relname;

    // the window function of the subquery
    FuncCall* win = nullptr;
    const char* rn = nullptr;
    bool star = false;
    ListCell* lc;
    foreach (lc, inner->targetList) {
        ResTarget* rt = (ResTarget*) lfirst(lc);
        if (is_star(rt->val)) {
            star = true;
        } else if (rt->val != nullptr && IsA(rt->val, FuncCall) && ((FuncCall*) rt->val)->over) {
            if (win != nullptr) TOPN("several window functions: this query is Top-N, not Deduplicate");
            win = (FuncCall*) rt->val;
            rn = rt->name;
        } else {
            NOT_DEDUP("the subquery may only select * and the row number");
        }
    }
    if (!star) NOT_DEDUP("the subquery must select * beside the row number");
    if (win == nullptr) NOT_DEDUP("the subquery computes no ROW_NUMBER() OVER (...)");
    const char* fn = func_name(win);
    if (strcmp(fn, "rank") == 0 || strcmp(fn, "dense_rank") == 0)
        TOPN("%s() is a rank, not a row number: this query is Top-N, not Deduplicate",
             strcmp(fn, "rank") == 0 ? "RANK" : "DENSE_RANK");
    if (strcmp(fn, "row_number") != 0 || win->args != NIL)
        NOT_DEDUP("the window function must be ROW_NUMBER()");
    if (rn == nullptr) NOT_DEDUP("the row number needs an alias (AS rn)");
    WindowDef* w = win->over;
    if (w->refname != nullptr || w->frameOptions != FRAMEOPTION_DEFAULTS)
        NOT_DEDUP("the window must be OVER (PARTITION BY <key> ORDER BY <time>)");
    if (list_length(w->partitionClause) != 1)
        NOT_DEDUP("PARTITION BY must name exactly one payload field (the key)");
    const char* key = column_name((Node*) linitial(w->partitionClause));
    if (key == nullptr) NOT_DEDUP("PARTITION BY must name a payload field");
    if (list_length(w->orderClause) == 0)
        NOT_DEDUP("ORDER BY <time> is required (proctime() or a rowtime field)");
    if (list_length(w->orderClause) > 1)
        TOPN("ORDER BY has several order keys: this query is Top-N, not Deduplicate");
    SortBy* sb = (SortBy*) linitial(w->orderClause);
    if (sb->sortby_nulls != SORTBY_NULLS_DEFAULT || sb->sortby_dir == SORTBY_USING)
        TOPN("ORDER BY with NULLS or USING is a value order: this query is Top-N, not Deduplicate");
    bool keep_last = sb->sortby_dir == SORTBY_DESC;
    const char* rowtime = column_name(sb->node);
    bool proctime = false;
    if (rowtime == nullptr) {
        if (sb->node != nullptr && IsA(sb->node, FuncCall) &&
            strcmp(func_name((FuncCall*) sb->node), "proctime") == 0 &&
            ((FuncCall*) sb->node)->args == NIL && ((FuncCall*) sb->node)->over == nullptr)
            proctime = true;
        else
            TOPN("ORDER BY a value expression (not proctime() or a time field): this query is "
                 "Top-N, not Deduplicate");
    }

    // the outer filter: rn = 1, rn <= 1 or rn < 2
    Node* wc = outer->whereClause;
    if (wc == nullptr || !IsA(wc, A_Expr) || ((A_Expr*) wc)->kind != AEXPR_OP ||
        list_length(((A_Expr*) wc)->name) != 1)
        NOT_DEDUP("the outer query must filter WHERE %s = 1", rn);
    A_Expr* cmp = (A_Expr*) wc;
    const char* op = strVal(linitial(cmp->name));
    const char* lhs = column_name(cmp->lexpr);
    long n;
    if (lhs == nullptr || strcmp(lhs, rn) != 0 || !int_const(cmp->rexpr, &n))
        NOT_DEDUP("the outer query must filter WHERE %s = 1", rn);
    long top_rank;
    if (strcmp(op, "=") == 0 || strcmp(op, "<=") == 0)
        top_rank = n;
    else if (strcmp(op, "<") == 0)
        top_rank = n - 1;
    else
        NOT_DEDUP("the outer query must filter WHERE %s = 1 (or <= 1, < 2)", rn);
    if (strcmp(op, "=") == 0 && n > 1)
        TOPN("%s = %ld selects rank %ld: this query is Top-N, not Deduplicate", rn, n, n);
    if (top_rank > 1)
        TOPN("%s %s %ld keeps more than rank 1: this query is Top-N, not Deduplicate", rn, op, n);
    if (top_rank < 1) NOT_DEDUP("%s %s %ld selects no row", rn, op, n);

    // the projection: named columns, never the row number
    StringInfoData cols;
    initStringInfo(&cols);
    appendStringInfoChar(&cols, '[');
    bool first = true;
    foreach (lc, outer->targetList) {
        ResTarget* rt = (ResTarget*) lfirst(lc);
        if (is_star(rt->val))
            TOPN("SELECT * projects the row number %s: this query is Top-N, not Deduplicate", rn);
        const char* c = column_name(rt->val);
        if (c == nullptr) NOT_DEDUP("the outer query may only project columns");
        if (strcmp(c, rn) == 0)
            TOPN("the row number %s is projected: this query is Top-N, not Deduplicate", rn);
        if (!first) appendStringInfoChar(&cols, ',');
        first = false;
        json_str(&cols, c);
    }
    appendStringInfoChar(&cols, ']');

    StringInfoData b;
    initStringInfo(&b);
    appendStringInfoString(&b, "{\"queue\":");
    json_str(&b, queue);
    appendStringInfo(&b, ",\"columns\":%s,\"options\":{\"key\":", cols.data);
    json_str(&b, key);
    appendStringInfo(&b, ",\"order\":\"%s\",\"keep\":\"%s\"", proctime ? "proctime" : "rowtime",
                     keep_last ? "last" : "first");
    if (!proctime) {
        appendStringInfoString(&b, ",\"rowtime\":");
        json_str(&b, rowtime);
    }
    appendStringInfoString(&b, "}}");
    PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(b.data)));
}
