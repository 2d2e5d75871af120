#include "draw/diff_drawing.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#include <graphviz/gvplugin.h>

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "engine/op_registry.h"

namespace graft::draw {
namespace {

enum class Status { kUnchanged, kAdded, kChanged, kRemoved };

const char* StatusName(Status s) {
  switch (s) {
    case Status::kAdded:
      return "added";
    case Status::kChanged:
      return "changed";
    case Status::kRemoved:
      return "removed";
    default:
      return "unchanged";
  }
}

const char* Fill(Status s) {
  switch (s) {
    case Status::kAdded:
      return "#b7f0b1";
    case Status::kChanged:
      return "#ffd08a";
    case Status::kRemoved:
      return "#ffe4e1";
    default:
      return "#ffffff";
  }
}

// One node of either graph: the head graph's when it has it.
struct Item {
  std::string name;
  const Node* before = nullptr;
  const Node* after = nullptr;
  Status status = Status::kUnchanged;
  const Node& node() const { return after ? *after : *before; }
};

// A data or control edge between two items; `old` when only the base graph
// has it, `fresh` when only the head graph has it.
struct Edge {
  int from = 0, to = 0;
  bool control = false, old = false, fresh = false;
  int elided = 0;  // > 0: a path through that many nodes not drawn
};

// Both graphs as one: items by name, every edge either graph has.
struct Union {
  std::vector<Item> items;
  std::map<std::string, int> index;
  std::vector<Edge> edges;
  std::vector<std::vector<int>> readers;  // data readers of each item
  std::vector<std::vector<int>> inputs;   // data inputs of each item
};

using EdgeKey = std::tuple<std::string, std::string, bool>;

std::set<EdgeKey> EdgesOf(const Graph& g) {
  std::set<EdgeKey> out;
  g.ForEachNode([&](const Node& n) {
    for (Endpoint e : n.inputs()) {
      if (e.valid()) out.insert({g.node(e.node).name(), n.name(), false});
    }
    for (NodeId c : n.control_inputs()) {
      if (c != kNoNode) out.insert({g.node(c).name(), n.name(), true});
    }
  });
  return out;
}

Union Unite(const Graph& before, const Graph& after, const GraphDiff& diff) {
  Union u;
  std::set<std::string> changed;
  for (const NodeChange& c : diff.changed) changed.insert(c.name);
  after.ForEachNode([&](const Node& n) {
    Item item{n.name(), before.FindNode(n.name()), &n};
    item.status = item.before == nullptr    ? Status::kAdded
                  : changed.count(n.name()) ? Status::kChanged
                                            : Status::kUnchanged;
    u.index[n.name()] = u.items.size();
    u.items.push_back(item);
  });
  before.ForEachNode([&](const Node& n) {
    if (after.Contains(n.name())) return;
    u.index[n.name()] = u.items.size();
    u.items.push_back({n.name(), &n, nullptr, Status::kRemoved});
  });
  std::set<EdgeKey> in_after = EdgesOf(after), in_before = EdgesOf(before);
  u.readers.resize(u.items.size());
  u.inputs.resize(u.items.size());
  auto add = [&](const EdgeKey& k, bool old, bool fresh) {
    Edge e{u.index.at(std::get<0>(k)), u.index.at(std::get<1>(k)),
           std::get<2>(k), old, fresh};
    u.edges.push_back(e);
    if (!e.control) {
      u.readers[e.from].push_back(e.to);
      u.inputs[e.to].push_back(e.from);
    }
  };
  for (const EdgeKey& k : in_after) add(k, false, !in_before.count(k));
  for (const EdgeKey& k : in_before) {
    if (!in_after.count(k)) add(k, true, false);
  }
  return u;
}

// Constants, variables and their reads (Identity, ReadVariableOp of one).
std::vector<bool> Foldable(const Union& u) {
  static const std::set<std::string> kLeaves = {"Const", "VariableV2",
                                                "VarHandleOp", "Variable"};
  static const std::set<std::string> kReads = {"Identity", "ReadVariableOp"};
  std::vector<int> state(u.items.size(), -1);  // -1 unknown, 0 no, 1 yes
  std::function<bool(int)> foldable = [&](int i) {
    if (state[i] >= 0) return state[i] == 1;
    state[i] = 0;
    const Node& n = u.items[i].node();
    bool yes = false;
    if (n.control_inputs().empty()) {
      if (kLeaves.count(n.op())) {
        yes = u.inputs[i].empty();
      } else if (kReads.count(n.op()) && u.inputs[i].size() == 1) {
        yes = foldable(u.inputs[i][0]);
      }
    }
    state[i] = yes ? 1 : 0;
    return yes;
  };
  std::vector<bool> out(u.items.size());
  for (size_t i = 0; i < u.items.size(); ++i) out[i] = foldable(i);
  return out;
}

// The drawn items reading a foldable item, directly or through other
// foldable ones.
std::vector<int> Hosts(const Union& u, const std::vector<bool>& foldable,
                       const std::vector<bool>& drawn, int i) {
  std::set<int> out;
  std::vector<int> stack = {i};
  std::set<int> seen = {i};
  while (!stack.empty()) {
    int x = stack.back();
    stack.pop_back();
    for (int r : u.readers[x]) {
      if (!foldable[r] && drawn[r]) out.insert(r);
      if (foldable[r] && seen.insert(r).second) stack.push_back(r);
    }
  }
  return {out.begin(), out.end()};
}

// The changed items and `context` hops of unchanged ones around them; a
// foldable item counts through the items that read it.
std::vector<bool> Selected(const Union& u, const std::vector<bool>& foldable,
                           const DrawingOptions& options) {
  const size_t n = u.items.size();
  if (options.full) return std::vector<bool>(n, true);
  std::vector<int> distance(n, -1);
  std::deque<int> queue;
  std::vector<bool> everything(n, true);
  auto seed = [&](int i) {
    if (distance[i] < 0) {
      distance[i] = 0;
      queue.push_back(i);
    }
  };
  for (size_t i = 0; i < n; ++i) {
    if (u.items[i].status == Status::kUnchanged) continue;
    if (!foldable[i]) {
      seed(i);
      continue;
    }
    std::vector<int> hosts = Hosts(u, foldable, everything, i);
    if (hosts.empty()) seed(i);
    for (int h : hosts) seed(h);
  }
  std::vector<std::vector<int>> neighbours(n);
  for (const Edge& e : u.edges) {
    neighbours[e.from].push_back(e.to);
    neighbours[e.to].push_back(e.from);
  }
  while (!queue.empty()) {
    int x = queue.front();
    queue.pop_front();
    if (distance[x] >= options.context) continue;
    for (int y : neighbours[x]) {
      if (distance[y] >= 0 || foldable[y]) continue;
      distance[y] = distance[x] + 1;
      queue.push_back(y);
    }
  }
  std::vector<bool> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = distance[i] >= 0;
  return out;
}

// Data paths from a box to another through nodes not drawn, as one dotted
// edge each (so that the picture keeps the graph's flow where context ends).
std::vector<Edge> ElidedPaths(const Union& u, const std::vector<int>& box_of,
                              const std::vector<bool>& foldable) {
  constexpr int kMaxVisits = 256;  // per box: bounded on huge graphs
  std::vector<Edge> out;
  std::vector<int> seen(u.items.size(), -1);
  for (size_t b = 0; b < u.items.size(); ++b) {
    if (box_of[b] < 0) continue;
    std::deque<std::pair<int, int>> queue;  // item, hidden nodes so far
    for (int r : u.readers[b]) {
      if (box_of[r] < 0 && !foldable[r] && seen[r] != static_cast<int>(b)) {
        seen[r] = b;
        queue.push_back({r, 1});
      }
    }
    std::set<int> reached;
    for (int visits = 0; !queue.empty() && visits < kMaxVisits; ++visits) {
      auto [x, hidden] = queue.front();
      queue.pop_front();
      for (int r : u.readers[x]) {
        if (box_of[r] >= 0) {
          if (reached.insert(r).second)
            out.push_back(
                {static_cast<int>(b), r, false, false, false, hidden});
        } else if (!foldable[r] && seen[r] != static_cast<int>(b)) {
          seen[r] = b;
          queue.push_back({r, hidden + 1});
        }
      }
    }
  }
  return out;
}

std::string Html(const std::string& text) { return HtmlEscape(text); }

// The end of a long name, as much as fits a box.
std::string Tail(const std::string& name, size_t width = 34) {
  return name.size() <= width ? name
                              : "..." + name.substr(name.size() - (width - 3));
}

// "float32 3x3x64x64" of a constant or variable (through its reads).
std::string ValueShape(const Union& u, int i) {
  const Node* n = &u.items[i].node();
  while (!u.inputs[i].empty()) {
    i = u.inputs[i][0];
    n = &u.items[i].node();
  }
  const tf::AttrValue* dtype = n->attr("dtype");
  std::vector<std::string> dims;
  if (const tf::AttrValue* v = n->attr("value"); v && v->has_tensor()) {
    for (const auto& d : v->tensor().tensor_shape().dim())
      dims.push_back(absl::StrCat(d.size()));
  } else if (const tf::AttrValue* s = n->attr("shape"); s && s->has_shape()) {
    for (const auto& d : s->shape().dim())
      dims.push_back(d.size() < 0 ? "?" : absl::StrCat(d.size()));
  }
  return absl::StrCat(dtype ? DataTypeName(dtype->type()) : "", " ",
                      dims.empty() ? "scalar" : absl::StrJoin(dims, "x"));
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '<') {
      out += "\\u003c";  // never "</script>" inside the page's script
    } else if (c < 0x20) {
      out += absl::StrFormat("\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string JsonLines(const Graph* g, const Node* n) {
  if (n == nullptr) return "[]";
  std::vector<std::string> lines;
  for (const std::string& line : NodeDetails(*g, *n, false))
    lines.push_back(JsonString(line));
  return absl::StrCat("[", absl::StrJoin(lines, ","), "]");
}

// Graphviz keeps global state: one layout at a time.
std::mutex graphviz_mutex;

// The graph as Graphviz sees it, laid out and rendered to SVG.
// A box as Graphviz draws it: an HTML-like label.
struct Box {
  std::string id, label, tooltip;
  bool removed = false;
};

}  // namespace
}  // namespace graft::draw

// Graphviz's `dot` layout and its SVG renderer, linked in (not loaded from
// the installed plugin folder), so that a drawing needs no Graphviz
// installation beside graft's own libraries (the wheel carries them).
extern "C" {
extern gvplugin_library_t gvplugin_dot_layout_LTX_library;
extern gvplugin_library_t gvplugin_core_LTX_library;
}

namespace graft::draw {
namespace {

const lt_symlist_t kGraphvizPlugins[] = {
    {"gvplugin_dot_layout_LTX_library", &gvplugin_dot_layout_LTX_library},
    {"gvplugin_core_LTX_library", &gvplugin_core_LTX_library},
    {nullptr, nullptr}};

absl::StatusOr<std::string> Render(
    const std::vector<Box>& nodes,
    const std::vector<std::pair<std::pair<int, int>, const Edge*>>& edges) {
  std::lock_guard<std::mutex> lock(graphviz_mutex);
  agseterr(AGMAX);  // errors come back as return codes, not on stderr
  GVC_t* gvc = gvContextPlugins(kGraphvizPlugins, /*demand_loading=*/0);
  Agraph_t* g = agopen(const_cast<char*>("diff"), Agdirected, nullptr);
  auto set = [](void* obj, const char* key, const std::string& value) {
    agsafeset(obj, const_cast<char*>(key), const_cast<char*>(value.c_str()),
              const_cast<char*>(""));
  };
  set(g, "rankdir", "TB");
  set(g, "nodesep", "0.25");
  set(g, "ranksep", "0.35");
  set(g, "fontname", "Courier");
  std::vector<Agnode_t*> made;
  for (size_t i = 0; i < nodes.size(); ++i) {
    Agnode_t* n = agnode(g, const_cast<char*>(nodes[i].id.c_str()), 1);
    set(n, "shape", "plain");
    set(n, "fontname", "Courier");
    set(n, "fontsize", "10");
    set(n, "id", nodes[i].id);
    set(n, "class", "gnode");
    set(n, "tooltip", nodes[i].tooltip);
    // The head graph's nodes in one group: dot keeps their edges straight
    // and puts what was removed beside them.
    if (!nodes[i].removed) set(n, "group", "head");
    char* label = agstrdup_html(g, const_cast<char*>(nodes[i].label.c_str()));
    agsafeset(n, const_cast<char*>("label"), label, const_cast<char*>(""));
    agstrfree(g, label);
    made.push_back(n);
  }
  for (const auto& [ends, e] : edges) {
    Agedge_t* edge = agedge(g, made[ends.first], made[ends.second], nullptr, 1);
    set(edge, "arrowsize", "0.6");
    if (e->elided > 0) {
      set(edge, "color", "#aaaaaa");
      set(edge, "style", "dotted");
      set(edge, "label", absl::StrCat(e->elided, " not drawn"));
      set(edge, "fontsize", "8");
      set(edge, "fontname", "Courier");
      set(edge, "fontcolor", "#888888");
      continue;
    }
    if (e->old) {
      set(edge, "color", "#c0392b");
      set(edge, "style", "dashed");
    } else if (e->fresh) {
      set(edge, "color", "#1e8449");
      set(edge, "penwidth", "1.6");
    } else {
      set(edge, "color", "#666666");
    }
    if (e->control) set(edge, "style", e->old ? "dashed" : "dotted");
  }
  int rc = gvLayout(gvc, g, "dot");
  std::string svg;
  if (rc == 0) {
    char* data = nullptr;
    unsigned int length = 0;
    rc = gvRenderData(gvc, g, "svg", &data, &length);
    if (rc == 0 && data != nullptr) svg.assign(data, length);
    gvFreeRenderData(data);
    gvFreeLayout(gvc, g);
  }
  agclose(g);
  gvFreeContext(gvc);
  if (rc != 0 || svg.empty()) {
    return absl::InternalError(
        "Graphviz could not lay out the drawing");
  }
  size_t start = svg.find("<svg");
  return start == std::string::npos ? svg : svg.substr(start);
}

}  // namespace

absl::StatusOr<DiffDrawing> DrawDiff(const Graph& before, const Graph& after,
                                     const GraphDiff& diff,
                                     const DrawingOptions& options) {
  Union u = Unite(before, after, diff);
  std::vector<bool> foldable = options.fold_constants
                                   ? Foldable(u)
                                   : std::vector<bool>(u.items.size(), false);
  std::vector<bool> selected = Selected(u, foldable, options);
  // Boxes: the selected items that are not folded into a selected reader.
  std::vector<int> box_of(u.items.size(), -1);
  std::vector<std::vector<int>> rows(u.items.size());  // folded inputs
  DiffDrawing out;
  std::vector<int> boxes;
  for (size_t i = 0; i < u.items.size(); ++i) {
    if (!selected[i] || foldable[i]) continue;
    box_of[i] = boxes.size();
    boxes.push_back(i);
  }
  for (size_t i = 0; i < u.items.size(); ++i) {
    if (!foldable[i]) continue;
    bool direct_host = false;
    for (int r : u.readers[i]) {
      if (box_of[r] >= 0) {
        rows[r].push_back(i);
        direct_host = true;
      }
    }
    std::vector<int> hosts = Hosts(u, foldable, selected, i);
    if (direct_host) {
      ++out.folded;
    } else if (hosts.empty() && selected[i]) {
      box_of[i] = boxes.size();  // read by nothing drawn: its own box
      boxes.push_back(i);
    }
  }
  for (size_t i = 0; i < u.items.size(); ++i) {
    if (!selected[i] && !foldable[i]) ++out.hidden;
  }
  if (static_cast<int>(boxes.size()) > options.max_nodes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the drawing would have ", boxes.size(), " boxes (more than ",
        options.max_nodes, "); draw less context (--context) or diff a part"));
  }
  out.boxes = boxes.size();
  std::vector<Box> nodes;
  std::vector<std::string> details;
  for (int i : boxes) {
    const Item& item = u.items[i];
    const Node& n = item.node();
    std::string id = absl::StrCat(options.id_prefix, nodes.size());
    bool removed = item.status == Status::kRemoved;
    std::string label = absl::StrCat(
        "<table border=\"1\" cellborder=\"0\" cellspacing=\"0\" "
        "cellpadding=\"2\" style=\"rounded",
        removed ? ",dashed" : "", "\" color=\"",
        removed ? "#c0392b" : "#555555", "\" bgcolor=\"", Fill(item.status),
        "\"><tr><td align=\"left\"><b>", Html(n.op()),
        "</b></td></tr><tr><td align=\"left\">", Html(Tail(item.name)),
        "</td></tr>");
    std::vector<std::string> folded_json;
    for (int f : rows[i]) {
      const Item& row = u.items[f];
      absl::StrAppend(&label, "<tr><td align=\"left\" bgcolor=\"",
                      Fill(row.status), "\"><font point-size=\"8\">",
                      Html(Tail(row.name, 26)), " ", Html(ValueShape(u, f)),
                      "</font></td></tr>");
      folded_json.push_back(
          absl::StrCat("{\"name\":", JsonString(row.name),
                       ",\"status\":", JsonString(StatusName(row.status)),
                       ",\"what\":", JsonString(ValueShape(u, f)), "}"));
    }
    label += "</table>";
    nodes.push_back(
        {id, label, absl::StrCat(item.name, " (", n.op(), ")"), removed});
    details.push_back(absl::StrCat(
        JsonString(id), ":{\"name\":", JsonString(item.name), ",\"op\":",
        JsonString(n.op()), ",\"status\":", JsonString(StatusName(item.status)),
        ",\"before\":", JsonLines(&before, item.before),
        ",\"after\":", JsonLines(&after, item.after), ",\"folded\":[",
        absl::StrJoin(folded_json, ","), "]}"));
  }
  std::vector<Edge> elided = ElidedPaths(u, box_of, foldable);
  std::vector<std::pair<std::pair<int, int>, const Edge*>> edges;
  for (const std::vector<Edge>* list : {&u.edges, &elided}) {
    for (const Edge& e : *list) {
      if (box_of[e.from] >= 0 && box_of[e.to] >= 0)
        edges.push_back({{box_of[e.from], box_of[e.to]}, &e});
    }
  }
  absl::StatusOr<std::string> svg = Render(nodes, edges);
  if (!svg.ok()) return svg.status();
  out.svg = *std::move(svg);
  out.details_json = absl::StrCat("{", absl::StrJoin(details, ","), "}");
  return out;
}

std::string DrawingHead() {
  return R"(<style>
.drawing{overflow:auto;border:1px solid #ddd;margin:8px 0;max-height:85vh}
.drawing g.gnode{cursor:pointer}
.drawing g.gnode.picked polygon,.drawing g.gnode.picked path{stroke:#1f6feb;stroke-width:3}
#graft-panel{position:fixed;right:12px;top:12px;width:38%;max-height:90vh;overflow:auto;
background:#fff;border:1px solid #999;box-shadow:0 2px 8px #0003;padding:8px;font:12px monospace;display:none}
#graft-panel table{border-collapse:collapse;width:100%}
#graft-panel td{border-top:1px solid #eee;padding:2px 4px;vertical-align:top;word-break:break-all}
#graft-panel tr.differs td{background:#fff3cd}
.k{display:inline-block;width:14px;height:14px;border:1px solid #555;margin:0 4px 0 12px;vertical-align:middle}
</style>
<script>
var graftDetails = {};
function graftKey(line){var i=line.indexOf(': ');return i<0?line:line.substring(0,i);}
function graftShow(id){
  var d=graftDetails[id]; if(!d) return;
  document.querySelectorAll('g.gnode.picked').forEach(function(g){g.classList.remove('picked');});
  var g=document.getElementById(id); if(g) g.classList.add('picked');
  var keys=[],b={},a={};
  d.before.forEach(function(l){var k=graftKey(l);b[k]=l.substring(k.length+2);if(keys.indexOf(k)<0)keys.push(k);});
  d.after.forEach(function(l){var k=graftKey(l);a[k]=l.substring(k.length+2);if(keys.indexOf(k)<0)keys.push(k);});
  var esc=function(s){return (s===undefined?'':s).replace(/&/g,'&amp;').replace(/</g,'&lt;');};
  var h='<b>'+esc(d.name)+'</b> ('+esc(d.op)+', '+d.status+') <a href="#" onclick="document.getElementById(\'graft-panel\').style.display=\'none\';return false">close</a>';
  h+='<table><tr><td></td><td><b>before</b></td><td><b>after</b></td></tr>';
  keys.forEach(function(k){h+='<tr'+(b[k]!==a[k]?' class="differs"':'')+'><td>'+esc(k)+'</td><td>'+esc(b[k])+'</td><td>'+esc(a[k])+'</td></tr>';});
  h+='</table>';
  if(d.folded.length){h+='<p>folded into this box:</p><table>';
    d.folded.forEach(function(f){h+='<tr><td>'+esc(f.name)+'</td><td>'+esc(f.what)+'</td><td>'+f.status+'</td></tr>';});
    h+='</table>';}
  var p=document.getElementById('graft-panel'); p.innerHTML=h; p.style.display='block';
}
// Tall drawings drift sideways: start each one's view at its first box.
window.addEventListener('load',function(){
  document.querySelectorAll('.drawing').forEach(function(div){
    var top=null;
    div.querySelectorAll('g.gnode').forEach(function(g){
      var r=g.getBoundingClientRect(); if(!top||r.top<top.top) top=r;});
    if(top) div.scrollLeft+=top.left-div.getBoundingClientRect().left-40;
  });
});
document.addEventListener('click',function(ev){
  var g=ev.target.closest&&ev.target.closest('g.gnode'); if(g) graftShow(g.id);
});
</script>
)";
}

std::string DrawingSection(const DiffDrawing& drawing) {
  std::string note;
  if (drawing.hidden > 0) {
    note = absl::StrCat("<p><small>", drawing.hidden,
                        " unchanged node(s) not drawn; ", drawing.folded,
                        " constant(s) drawn inside their readers' boxes; "
                        "click a node for its attrs before and after.</small>"
                        "</p>\n");
  } else {
    note = absl::StrCat("<p><small>", drawing.folded,
                        " constant(s) drawn inside their readers' boxes; "
                        "click a node for its attrs before and after."
                        "</small></p>\n");
  }
  return absl::StrCat(
      note, "<div class=\"drawing\">", drawing.svg,
      "</div>\n<script>Object.assign(graftDetails, ",
      absl::StrReplaceAll(drawing.details_json, {{"</", "<\\/"}}),
      ");</script>\n");
}

absl::StatusOr<std::string> DiffPage(const Graph& before, const Graph& after,
                                     const GraphDiff& diff,
                                     const DrawingOptions& options) {
  absl::StatusOr<DiffDrawing> drawing = DrawDiff(before, after, diff, options);
  if (!drawing.ok()) return drawing.status();
  return absl::StrCat(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>graft "
      "diff</title>\n",
      DrawingHead(),
      "<style>body{font-family:sans-serif;margin:16px}pre{background:#f6f6f6;"
      "padding:8px}</style></head><body>\n<h2>graft diff</h2>\n<p>",
      diff.added.size(), " added, ", diff.removed.size(), " removed, ",
      diff.changed.size(),
      " changed <span class=\"k\" style=\"background:#b7f0b1\"></span>added"
      "<span class=\"k\" style=\"background:#ffd08a\"></span>changed"
      "<span class=\"k\" style=\"background:#ffe4e1;border:1px dashed "
      "#c0392b\"></span>removed (its old edges dashed red; new edges green)"
      "</p>\n",
      DrawingSection(*drawing), "<div id=\"graft-panel\"></div>\n<pre>",
      Html(FormatDiffText(diff)), "</pre>\n</body></html>\n");
}

}  // namespace graft::draw
