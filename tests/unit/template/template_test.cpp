// The Jinja2 interpreter (src/template) on small templates whose output Jinja2 semantics fix
// (cross-checked with npm @huggingface/jinja 0.5.13): whitespace control, loops, namespace,
// slicing, filters, tests, macros, errors naming the line and the construct, and the limits.
// Run: ctest --test-dir build/default -R template
#include <gtest/gtest.h>

#include <string>

#include "template/chat_template.h"

namespace gufo::tmpl {
namespace {

using nlohmann::ordered_json;

// The rendered text, or "ERROR: <message>" (parse or render failure).
std::string render(const std::string& source, const std::string& variables = "{}") {
  auto parsed = ChatTemplate::parse(source);
  if (!parsed.ok()) return "ERROR: " + parsed.error().message;
  auto text = parsed->render(ordered_json::parse(variables));
  if (!text.ok()) return "ERROR: " + text.error().message;
  return *text;
}

TEST(TemplateText, PlainTextAndTrailingNewline) {
  EXPECT_EQ(render("hello"), "hello");
  EXPECT_EQ(render("hello\n"), "hello");  // one trailing newline dropped (keep_trailing_newline off)
  EXPECT_EQ(render("hello\n\n"), "hello\n");
  EXPECT_EQ(render(""), "");
  EXPECT_EQ(render("a {# comment #}b"), "a b");
  EXPECT_EQ(render("{% raw %}{{ x }}{% endraw %}"), "{{ x }}");
}

TEST(TemplateText, WhitespaceControl) {
  EXPECT_EQ(render("a  {{- 'b' -}}  c"), "abc");
  EXPECT_EQ(render("a\n  {%- if true -%}\n  b\n{%- endif %}"), "ab");
  EXPECT_EQ(render("x {#- c -#} y"), "xy");
}

TEST(TemplateText, TrimAndLstripBlocks) {
  // trim_blocks drops the newline after a block tag; lstrip_blocks the indentation before it.
  EXPECT_EQ(render("{% if true %}\nyes\n{% endif %}\nend"), "yes\nend");
  EXPECT_EQ(render("    {% if true %}\nx\n    {% endif %}\n"), "x\n");
  // Expression tags keep both.
  EXPECT_EQ(render("  {{ 'a' }}\nb"), "  a\nb");
  EXPECT_EQ(render("{% for i in [1, 2] %}\n  {{ i }}\n{% endfor %}\n"), "  1\n  2\n");
}

TEST(TemplateExpr, Literals) {
  EXPECT_EQ(render("{{ 1 }}|{{ 1.5 }}|{{ 2.0 }}|{{ 'x' }}|{{ \"y\" }}"), "1|1.5|2.0|x|y");
  EXPECT_EQ(render("{{ true }}|{{ false }}|{{ none }}|{{ True }}"), "true|false||true");
  EXPECT_EQ(render("{{ [1, 'a', none] }}"), "[1, \"a\", null]");
  EXPECT_EQ(render("{{ {'a': 1, 'b': [true]} }}"), "{\"a\": 1, \"b\": [true]}");
  EXPECT_EQ(render("{{ 'a' 'b' }}"), "ab");
  EXPECT_EQ(render("{{ 'tab\\tnl\\nq\\'' }}"), "tab\tnl\nq'");
  EXPECT_EQ(render("{{ (1, 2)[1] }}"), "2");
}

TEST(TemplateExpr, Arithmetic) {
  EXPECT_EQ(render("{{ 1 + 2 * 3 }}|{{ (1 + 2) * 3 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 % 3 }}|{{ -7 % 3 }}"),
            "7|9|3|-4|1|2");
  EXPECT_EQ(render("{{ 7 / 2 }}|{{ 2 ** 10 }}|{{ 2 ** -1 }}|{{ 1.5 + 1 }}|{{ -3 }}"), "3.5|1024|0.5|2.5|-3");
  EXPECT_EQ(render("{{ 'ab' ~ 1 ~ none }}|{{ 'a' + 'b' }}|{{ 'ab' * 2 }}|{{ [1] + [2] }}"), "ab1None|ab|abab|[1, 2]");
  EXPECT_EQ(render("{{ 1 == 1.0 }}|{{ 1 != 2 }}|{{ 'a' < 'b' }}|{{ 2 >= 3 }}|{{ [1, 2] == [1, 2] }}"),
            "true|true|true|false|true");
}

TEST(TemplateExpr, IntegerOverflowIsAnError) {
  EXPECT_EQ(render("{{ 9223372036854775807 + 1 }}"), "ERROR: chat template line 1: integer overflow in '+'");
  EXPECT_EQ(render("{{ 2 ** 64 }}"), "ERROR: chat template line 1: integer overflow in '**'");
  EXPECT_EQ(render("{{ 1 // 0 }}"), "ERROR: chat template line 1: integer division by zero");
  EXPECT_EQ(render("{{ -9223372036854775807 - 1 }}"), "-9223372036854775808");
  EXPECT_EQ(render("{{ 99999999999999999999 }}"),
            "ERROR: chat template line 1: integer literal 99999999999999999999 is too large");
}

TEST(TemplateExpr, LogicAndConditional) {
  EXPECT_EQ(render("{{ 1 and 'x' }}|{{ 0 or 'y' }}|{{ not [] }}|{{ 'a' if false else 'b' }}|{{ 'a' if true }}"),
            "x|y|true|b|a");
  EXPECT_EQ(render("{{ '' or [] or 'z' }}|{{ 'x' if none }}"), "z|");
  EXPECT_EQ(render("{{ 'b' in 'abc' }}|{{ 2 in [1, 2] }}|{{ 'k' in {'k': 1} }}|{{ 3 not in [1] }}"),
            "true|true|true|true");
  EXPECT_EQ(render("{{ 'x' in undefined_thing }}"), "false");
}

TEST(TemplateExpr, FilterBindsTighterThanPlus) {
  EXPECT_EQ(render("{{ 'a' + x | trim + 'b' }}", R"({"x": "  y  "})"), "ayb");
  EXPECT_EQ(render("{{ -x | abs }}", R"({"x": 3})"), "3");
  EXPECT_EQ(render("{{ xs | length - 1 }}", R"({"xs": [1, 2, 3]})"), "2");
}

TEST(TemplateExpr, IndexingAndSlicing) {
  const std::string vars = R"({"xs": [0, 1, 2, 3, 4], "s": "héllo"})";
  EXPECT_EQ(render("{{ xs[0] }}|{{ xs[-1] }}|{{ xs[9] }}|{{ xs.1 }}", vars), "0|4||1");
  EXPECT_EQ(render("{{ xs[1:3] }}|{{ xs[:2] }}|{{ xs[3:] }}|{{ xs[::2] }}", vars), "[1, 2]|[0, 1]|[3, 4]|[0, 2, 4]");
  EXPECT_EQ(render("{{ xs[::-1] }}|{{ xs[-2:] }}|{{ xs[3:0:-1] }}|{{ xs[::-2] }}", vars),
            "[4, 3, 2, 1, 0]|[3, 4]|[3, 2, 1]|[4, 2, 0]");
  EXPECT_EQ(render("{{ s[1] }}|{{ s[::-1] }}|{{ s[1:3] }}|{{ s | length }}", vars), "é|olléh|él|5");
  EXPECT_EQ(render("{{ xs[::0] }}", vars), "ERROR: chat template line 1: slice step cannot be zero");
}

TEST(TemplateExpr, AttributesOfUndefinedAndNone) {
  EXPECT_EQ(render("[{{ nothing }}][{{ nothing.a }}][{{ nothing.a.b }}][{{ d.missing }}]", R"({"d": {}})"), "[][][][]");
  EXPECT_EQ(render("{{ d['k'] }}|{{ d.k }}|{{ d.get('k') }}|{{ d.get('z', 5) }}", R"({"d": {"k": "v"}})"), "v|v|v|5");
  EXPECT_EQ(render("{{ nothing.strip() }}"),
            "ERROR: chat template line 1: cannot call method 'strip' of an undefined value");
}

TEST(TemplateStrings, Methods) {
  const std::string vars = R"({"s": "  Hello World  ", "t": "a,b,,c"})";
  EXPECT_EQ(render("[{{ s.strip() }}][{{ s.lstrip() }}][{{ s.rstrip() }}]", vars),
            "[Hello World][Hello World  ][  Hello World]");
  EXPECT_EQ(render("{{ 'xxaxx'.strip('x') }}|{{ '\\n\\nb\\n'.lstrip('\\n') }}|{{ 'ab\\n'.rstrip('\\n') }}"),
            "a|b\n|ab");
  EXPECT_EQ(render("{{ t.split(',') }}|{{ ' a  b '.split() }}|{{ t.split(',', 1) }}", vars),
            "[\"a\", \"b\", \"\", \"c\"]|[\"a\", \"b\"]|[\"a\", \"b,,c\"]");
  EXPECT_EQ(render("{{ 'abc'.startswith('ab') }}|{{ 'abc'.endswith(('x', 'c')) }}|{{ 'abc'.upper() }}"),
            "true|true|ABC");
  EXPECT_EQ(render("{{ 'a-b-c'.replace('-', '+') }}|{{ 'a-b-c'.replace('-', '', 1) }}|{{ ', '.join(['x', 'y']) }}"),
            "a+b+c|ab-c|x, y");
  EXPECT_EQ(render("{{ '<think>x</think>\\n\\ny'.split('</think>')[-1].lstrip('\\n') }}"), "y");
  EXPECT_EQ(render("{{ 'x'.nope() }}", "{}"), "ERROR: chat template line 1: unknown method 'str.nope'");
}

TEST(TemplateStrings, UnicodeTrim) {
  // As JavaScript's trim() (the oracle): U+3000 and U+00A0 are whitespace, U+200B is not.
  EXPECT_EQ(render("[{{ s | trim }}][{{ s.strip() }}]", R"({"s": "\u3000a\u00a0b\u00a0"})"), "[a\u00a0b][a\u00a0b]");
  EXPECT_EQ(render("[{{ s | trim }}]", R"({"s": "\u200bx"})"), "[\u200bx]");
}

TEST(TemplateStatements, IfElifElse) {
  const std::string tpl = "{% if n == 1 %}one{% elif n == 2 %}two{% else %}many{% endif %}";
  EXPECT_EQ(render(tpl, R"({"n": 1})"), "one");
  EXPECT_EQ(render(tpl, R"({"n": 2})"), "two");
  EXPECT_EQ(render(tpl, R"({"n": 3})"), "many");
}

TEST(TemplateStatements, ForLoopVariables) {
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
                   "{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}",
                   R"({"xs": ["a", "b"]})"),
            "1021truefalse2;2110falsetrue2;");
  EXPECT_EQ(
      render("{% for x in xs %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }} {% endfor %}", R"({"xs": [1, 2, 3]})"),
      "<1>2 1<2>3 2<3> ");
  EXPECT_EQ(
      render("{% for x in xs if x > 1 %}{{ x }}{{ loop.length }}{% else %}none{% endfor %}", R"({"xs": [1, 2, 3]})"),
      "2232");
  EXPECT_EQ(render("{% for x in [] %}{{ x }}{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", R"({"d": {"b": 1, "a": 2}})"),
            "b=1;a=2;");
  EXPECT_EQ(render("{% for k in d %}{{ k }}{% endfor %}", R"({"d": {"b": 1, "a": 2}})"), "ba");
  EXPECT_EQ(render("{% for x in xs %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}"
                   "{{ x }}{% endfor %}",
                   R"({"xs": [1, 2, 3, 4, 5]})"),
            "13");
  EXPECT_EQ(render("{% for m in messages[::-1] %}{{ m }}{% endfor %}", R"({"messages": [1, 2, 3]})"), "321");
}

TEST(TemplateStatements, SetScopingAndNamespace) {
  // A set inside a loop does not leak out of it; a namespace attribute does.
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [1, 2] %}{% set x = i %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(render("{% set ns = namespace(x=1) %}{% for i in [1, 2] %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}"),
            "4");
  EXPECT_EQ(render("{% set a, b = [1, 2] %}{{ b }}{{ a }}"), "21");
  EXPECT_EQ(render("{% set block %}  inner {{ 1 + 1 }}{% endset %}[{{ block }}]"), "[  inner 2]");
  EXPECT_EQ(render("{% set d = {'a': 1} %}{% set d.a = 2 %}"),
            "ERROR: chat template line 1: cannot set attribute 'a' of a dict (only of a namespace())");
}

TEST(TemplateStatements, Macros) {
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
                   "{{ greet('Ann') }} {{ greet('Bob', '?') }} {{ greet(punct='.', name='Cy') }}"),
            "Hi Ann! Hi Bob? Hi Cy.");
  EXPECT_EQ(render("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}"), "321");
  EXPECT_EQ(render("{% macro f() %}{% endmacro %}{{ f(1) }}"),
            "ERROR: chat template line 1: macro 'f' takes 0 arguments, got 1");
}

TEST(TemplateFilters, Strings) {
  EXPECT_EQ(render("{{ '  x ' | trim }}|{{ 'ab' | upper }}|{{ 'AB' | lower }}|{{ 'hello world' | title }}"),
            "x|AB|ab|Hello World");
  EXPECT_EQ(render("{{ 'hello' | capitalize }}|{{ 'a-b' | replace('-', '+') }}|{{ 'abc' | length }}"), "Hello|a+b|3");
  EXPECT_EQ(render("{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}"), "a\n  b\n\n  c|  a\n  b");
  EXPECT_EQ(render("{{ '<a>' | e }}|{{ '<a>' | safe }}"), "&lt;a&gt;|<a>");
  EXPECT_EQ(render("{{ '42' | int + 1 }}|{{ 'x' | int }}|{{ 3.9 | int }}|{{ '2.5' | float }}|{{ -2 | abs }}"),
            "43|0|3|2.5|2");
  EXPECT_EQ(render("{{ 2.567 | round(2) }}|{{ 2.5 | round }}|{{ 3.5 | round }}|{{ 7 | string }}"), "2.57|2.0|4.0|7");
}

TEST(TemplateFilters, Lists) {
  const std::string vars =
      R"({"xs": [3, 1, 2, 1], "people": [{"n": "a", "age": 30}, {"n": "b"}, {"n": "c", "age": 20}]})";
  EXPECT_EQ(render("{{ xs | join(',') }}|{{ xs | first }}|{{ xs | last }}|{{ xs | length }}|{{ xs | count }}", vars),
            "3,1,2,1|3|1|4|4");
  EXPECT_EQ(render("{{ xs | sort }}|{{ xs | sort(reverse=true) }}|{{ xs | unique }}|{{ xs | reverse }}", vars),
            "[1, 1, 2, 3]|[3, 2, 1, 1]|[3, 1, 2]|[1, 2, 1, 3]");
  EXPECT_EQ(render("{{ people | map(attribute='n') | join }}|{{ people | selectattr('age', 'defined') | "
                   "map(attribute='n') | list }}",
                   vars),
            "abc|[\"a\", \"c\"]");
  EXPECT_EQ(render("{{ people | rejectattr('age') | map(attribute='n') | first }}|"
                   "{{ people | selectattr('n', 'equalto', 'c') | map(attribute='age') | first }}",
                   vars),
            "b|20");
  EXPECT_EQ(render("{{ xs | select('odd') | list }}|{{ xs | reject('odd') | list }}|{{ xs | sum }}", vars),
            "[3, 1, 1]|[2]|7");
  EXPECT_EQ(render("{{ people | sort(attribute='n', reverse=true) | map(attribute='n') | join }}", vars), "cba");
  EXPECT_EQ(render("{{ 'ab' | list }}|{{ {'k': 1} | items }}|{{ none | default('d') }}|{{ nope | d('d') }}|"
                   "{{ '' | default('e', true) }}"),
            "[\"a\", \"b\"]|[[\"k\", 1]]||d|e");
  EXPECT_EQ(render("{{ ['a', 'b'] | map('upper') | join }}"), "AB");
}

TEST(TemplateFilters, ToJson) {
  const std::string vars = R"({"v": {"b": [1, "é", null, true, 2.5], "a": {"x": "q\"\n"}}})";
  EXPECT_EQ(render("{{ v | tojson }}", vars), R"({"b": [1, "é", null, true, 2.5], "a": {"x": "q\"\n"}})");
  EXPECT_EQ(render("{{ v.a | tojson(indent=2) }}", vars), "{\n  \"x\": \"q\\\"\\n\"\n}");
  EXPECT_EQ(render("{{ [1, [2]] | tojson(indent=2) }}"), "[\n  1,\n  [\n    2\n  ]\n]");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}"), R"({"a": 2, "b": 1})");
  EXPECT_EQ(render("{{ 'é' | tojson(ensure_ascii=true) }}"), R"("\u00e9")");
  EXPECT_EQ(render("{{ [] | tojson }}{{ {} | tojson }}"), "[]{}");
}

TEST(TemplateTests, TypeAndValueTests) {
  const std::string vars = R"({"s": "x", "n": 3, "f": 1.5, "l": [1], "d": {"a": 1}, "z": null, "b": false})";
  EXPECT_EQ(render("{{ s is string }}{{ n is string }}{{ n is number }}{{ n is integer }}{{ f is float }}", vars),
            "truefalsetruetruetrue");
  EXPECT_EQ(render("{{ d is mapping }}{{ l is mapping }}{{ l is iterable }}{{ l is sequence }}{{ z is none }}", vars),
            "truefalsetruetruetrue");
  EXPECT_EQ(render("{{ b is false }}{{ b is true }}{{ b is boolean }}{{ q is defined }}{{ q is undefined }}", vars),
            "truefalsetruefalsetrue");
  EXPECT_EQ(render("{{ n is odd }}{{ n is even }}{{ 9 is divisibleby 3 }}{{ n is divisibleby(2) }}", vars),
            "truefalsetruefalse");
  EXPECT_EQ(
      render("{{ n is equalto 3 }}{{ n is eq(4) }}{{ n is ne 4 }}{{ n is lt 4 }}{{ n is gt 4 }}{{ 1 is in l }}", vars),
      "truefalsetruetruefalsetrue");
  EXPECT_EQ(render("{{ z is not none }}{{ s is not defined }}", vars), "falsefalse");
}

TEST(TemplateGlobals, RangeNamespaceRaise) {
  EXPECT_EQ(render("{{ range(3) | list }}|{{ range(1, 4) | join }}|{{ range(5, 0, -2) | join(',') }}"),
            "[0, 1, 2]|123|5,3,1");
  EXPECT_EQ(render("{% set ns = namespace(items=[]) %}{% set ns.items = ns.items + [1] %}{{ ns.items }}"), "[1]");
  EXPECT_EQ(render("{{ raise_exception('bad ' ~ 'role') }}"), "ERROR: chat template line 1: raise_exception: bad role");
  EXPECT_EQ(render("{{ strftime_now('%Y') | length }}"), "4");
  EXPECT_EQ(render("{{ dict(a=1) }}"), "{\"a\": 1}");
}

TEST(TemplateErrors, UnsupportedConstructsNameTheLine) {
  EXPECT_EQ(render("line1\n{{ x | foo }}"), "ERROR: chat template line 2: unknown filter 'foo'");
  EXPECT_EQ(render("\n\n{% if x is foo %}{% endif %}"), "ERROR: chat template line 3: unknown test 'foo'");
  EXPECT_EQ(render("{% include 'x' %}"), "ERROR: chat template line 1: unsupported tag 'include'");
  EXPECT_EQ(render("{% if x %}unclosed"),
            "ERROR: chat template line 1: missing 'elif' or 'else' or 'endif' before the end of the template");
  EXPECT_EQ(render("{% endif %}"), "ERROR: chat template line 1: unexpected 'endif' tag");
  EXPECT_EQ(render("{{ x"), "ERROR: chat template line 1: missing '}}'");
  EXPECT_EQ(render("{{ 'x }}"), "ERROR: chat template line 1: unterminated string literal");
  EXPECT_EQ(render("a\n{{ 1 +* 2 }}"), "ERROR: chat template line 2: unexpected '*' in expression");
  EXPECT_EQ(render("{{ f(*xs) }}"), "ERROR: chat template line 1: unsupported argument unpacking '*'");
  EXPECT_EQ(render("{{ nope() }}"), "ERROR: chat template line 1: unknown function 'nope'");
  EXPECT_EQ(render("{{ 'a' + 1 }}"), "ERROR: chat template line 1: unsupported operand types for +: 'str' and 'int'");
  EXPECT_EQ(render("{{ '%s' % 1 }}"), "ERROR: chat template line 1: unsupported '%' string formatting");
  EXPECT_EQ(render("{% for x in 5 %}{% endfor %}"), "ERROR: chat template line 1: cannot loop over a int");
  EXPECT_EQ(render("{{ xs.append(1) }}", R"({"xs": []})"),
            "ERROR: chat template line 1: list.append() is not allowed: lists are immutable in chat templates");
}

TEST(TemplateLimits, DeepNestingIsAnError) {
  const std::string deep = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  EXPECT_EQ(render(deep).rfind("ERROR: chat template line 1: nesting deeper than 256", 0), 0u);
  std::string ifs;
  for (int i = 0; i < 400; ++i) ifs += "{% if true %}";
  EXPECT_EQ(render(ifs).rfind("ERROR: chat template line 1: nesting deeper than 256", 0), 0u);
  EXPECT_EQ(render("{{ " + std::string(3000, '-') + "1 }}").rfind("ERROR:", 0), 0u);
  EXPECT_EQ(render("{{ " + std::string(3000, '[') + std::string(3000, ']') + " }}").rfind("ERROR:", 0), 0u);
}

TEST(TemplateLimits, HugeRangeAndEndlessWorkFailFast) {
  EXPECT_EQ(render("{% for i in range(10**12) %}{% endfor %}"),
            "ERROR: chat template line 1: range() of more than 1048576 items");
  EXPECT_EQ(render("{{ 'x' * 10**12 }}"), "ERROR: chat template line 1: string repetition larger than 67108864 bytes");
  // Nested loops over allowed ranges: stopped by the step budget, not left to run for hours.
  // A small budget here; the default (RenderLimits::max_steps) is the same counter.
  auto parsed =
      ChatTemplate::parse("{% for i in range(1000000) %}{% for j in range(1000000) %}{% endfor %}{% endfor %}");
  ASSERT_TRUE(parsed.ok());
  RenderLimits limits;
  limits.max_steps = 20'000;
  auto text = parsed->render(ordered_json::object(), limits);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().message.rfind("chat template line 1: template ran more than 20000 steps", 0), 0u)
      << text.error().message;
  // Under the budget the same counter lets real work through.
  limits.max_steps = 200'000;
  auto small = ChatTemplate::parse("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}ok");
  ASSERT_TRUE(small.ok());
  auto done = small->render(ordered_json::object(), limits);
  ASSERT_TRUE(done.ok()) << done.error().message;
  EXPECT_EQ(*done, "ok");
}

TEST(TemplateLimits, RecursionAndOutputSize) {
  EXPECT_EQ(render("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").rfind("ERROR: chat template line 1:", 0), 0u);
  // Doubling a string 30 times would be 1 GiB: the string cap stops it.
  EXPECT_EQ(render("{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
                   "{% endfor %}{{ ns.s | length }}"),
            "ERROR: chat template line 1: string longer than the limit");
}

TEST(TemplateLimits, DeepValuesAndNamespacesInContainers) {
  // Deep JSON input is refused before anything recurses over it.
  std::string deep_json = std::string(100000, '[') + std::string(100000, ']');
  auto parsed = ChatTemplate::parse("{{ messages | length }}");
  ASSERT_TRUE(parsed.ok());
  ChatInputs inputs;
  inputs.messages = ordered_json::array({ordered_json::parse(deep_json)});
  auto text = render_chat(*parsed, inputs);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().message, "JSON nested deeper than 512 levels");
  // Values built by a template cannot nest without bound either.
  EXPECT_EQ(render("{% set ns = namespace(x=1) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}{% endfor %}"),
            "ERROR: chat template line 1: value nested deeper than 512 levels");
  EXPECT_EQ(render("{% set ns = namespace() %}{% set ns.self = ns %}"),
            "ERROR: chat template line 1: a namespace() cannot be stored in a list, dict or namespace");
  EXPECT_EQ(render("{% set ns = namespace() %}{{ [ns] }}"),
            "ERROR: chat template line 1: a namespace() cannot be stored in a list, dict or namespace");
}

TEST(TemplateText, GenerationTagsAreDropped) {
  // As @huggingface/jinja (and transformers' AssistantTracker): the tags render nothing.
  EXPECT_EQ(render("a{% generation %}b{% endgeneration %}c"), "abc");
  EXPECT_EQ(render("a {%- generation -%} b"), "ab");
}

TEST(TemplateChat, RenderChatVariables) {
  auto parsed = ChatTemplate::parse(
      "{{ bos_token }}{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"
      "{% if add_generation_prompt %}>{% endif %}{{ enable_thinking is defined }}{{ tools | length }}{{ eos_token }}");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  ChatInputs inputs;
  inputs.messages = ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
  inputs.bos_token = "<s>";
  inputs.eos_token = "</s>";
  auto text = render_chat(*parsed, inputs);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text, "<s>[user:hi]>false0</s>");
  inputs.add_generation_prompt = false;
  inputs.enable_thinking = false;
  inputs.tools = ordered_json::parse(R"([{"type": "function"}])");
  text = render_chat(*parsed, inputs);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text, "<s>[user:hi]true1</s>");
}

}  // namespace
}  // namespace gufo::tmpl
