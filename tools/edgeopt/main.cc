#include <cstdio>
int main() { std::puts("edgeopt: under construction"); return 0; }
