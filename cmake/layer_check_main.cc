// The entry point of the layer link checks (CMakeLists.txt): each silt_layer_check_<layer> is
// this plus every object of one layer, linked against only the layers it may use.
int main() { return 0; }
