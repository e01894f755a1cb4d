// README block 0: "The numerical language", a whole program (its main renamed; main alone
// may end without a return, so the renamed function is let off that warning).
#pragma GCC diagnostic ignored "-Wreturn-type"
#define main readme_snippet_0_main
#include "snippet_0.inc"
