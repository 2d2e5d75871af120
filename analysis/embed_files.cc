// Writes a C++ source that holds files as strings, by base name:
//   embed_files OUT.cc FILE...
// defines graft::analysis::EmbeddedProfiles() (analysis/cost.h).
#include <fstream>
#include <iostream>
#include <sstream>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: embed_files OUT.cc FILE...\n";
    return 2;
  }
  std::ofstream out(argv[1]);
  out << "#include <map>\n#include <string>\n\nnamespace graft::analysis {\n\n"
      << "const std::map<std::string, std::string>& EmbeddedProfiles() {\n"
      << "  static const auto* files = new std::map<std::string, "
         "std::string>{\n";
  for (int i = 2; i < argc; ++i) {
    std::ifstream in(argv[i]);
    if (!in) {
      std::cerr << "embed_files: cannot read " << argv[i] << "\n";
      return 1;
    }
    std::stringstream text;
    text << in.rdbuf();
    std::string name = argv[i];
    name = name.substr(name.rfind('/') + 1);
    out << "      {\"" << name << "\", R\"graft_embed(" << text.str()
        << ")graft_embed\"},\n";
  }
  out << "  };\n  return *files;\n}\n\n}  // namespace graft::analysis\n";
  return out ? 0 : 1;
}
