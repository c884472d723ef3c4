// The program of the layer checks (CMakeLists.txt): each analyzer library
// is linked whole into it with only the libraries it declares, so a call
// into a folder above it is an undefined reference and the build fails.
int main() { return 0; }
