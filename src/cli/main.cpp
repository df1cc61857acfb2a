// Placeholder entry point; replaced by the CLI (src/cli).
#include <cstdio>
int main() {
  std::fprintf(stderr, "ERROR: not built yet\n");
  return 1;
}
