/* tools/trace/tool.h (internal to pto-trace): the subcommands' work. */
#ifndef PTO_TOOLS_TRACE_TOOL_H
#define PTO_TOOLS_TRACE_TOOL_H

#include <stdio.h>

#include "trace/model.h"

/* compare.c: 1 when A and B record the same workload (program, operands). */
int tr_same_workload(const tr_trace *A, const tr_trace *B);
int tr_compare(const tr_trace *A, const tr_trace *B, int json, FILE *f);

/* html.c: the self-contained swimlane page for t. */
int tr_html(const tr_trace *t, FILE *f);

/* graph.c: every stage dump in dir rendered to SVG in out (Graphviz's dot),
 * graphs over max_nodes summarised. Prints a line per stage; 0, or 1 after
 * printing why. */
int tr_graph(const char *dir, const char *out, unsigned max_nodes,
             const char *dot);

/* viewer_html.c (generated from viewer.html at build time) */
extern const char *const pto_trace_viewer;
extern const unsigned long pto_trace_viewer_len;

#endif /* PTO_TOOLS_TRACE_TOOL_H */
