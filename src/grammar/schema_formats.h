// The string formats of JSON Schema that json_schema.cpp turns into grammars, as GBNF rules
// for the text between the quotes (all ASCII: no escaping involved). Exact forms accepted:
//   date       RFC 3339 full-date YYYY-MM-DD: month 01-12, the day within that month's
//              length, 29 February in leap years only (Gregorian: /4, not /100 unless /400).
//   time       RFC 3339 full-time HH:MM:SS[.fraction](Z|+HH:MM|-HH:MM), hours 00-23,
//              minutes and seconds 00-59 (no leap second 60), a fraction of 1 to 9 digits
//              (nanoseconds; a longer one is a sampled model's run of zeros): stricter, never weaker;
//              'Z' also lower-case, as RFC 3339 allows.
//   date-time  date "T" time ('T' also lower-case).
//   uuid       RFC 4122 text 8-4-4-4-12 hex digits, either case.
//   email      dot-atom local part (RFC 5322 atext: letters, digits, !#$%&'*+/=?^_`{|}~-
//              in dot-separated runs) "@" a domain of two or more dot-separated labels of
//              letters, digits and inner hyphens, at most 63 characters each (RFC 1035; ajv's
//              email format, which the functional suites validate with, says the same). No
//              quoted local parts, no IP literals.
// Each format is one rule named format-<name> (plus helpers prefixed fmt-).
// Tested by tests/unit/grammar/json_schema_test.cpp.
#pragma once

#include <string_view>

namespace gufo::grammar {

inline constexpr std::string_view kFormatRules = R"gbnf(
fmt-d ::= [0-9]
fmt-leap-yy ::= [02468] [048] | [13579] [26]
fmt-leap-year ::= fmt-d fmt-d ( "0" [48] | [2468] [048] | [13579] [26] ) | fmt-leap-yy "00"
fmt-date ::= fmt-d fmt-d fmt-d fmt-d "-" ( ( "0" [13578] | "1" [02] ) "-" fmt-day31 | ( "0" [469] | "11" ) "-" fmt-day30 | "02-" fmt-day28 ) | fmt-leap-year "-02-29"
fmt-day28 ::= "0" [1-9] | "1" fmt-d | "2" [0-8]
fmt-day30 ::= fmt-day28 | "29" | "30"
fmt-day31 ::= fmt-day30 | "31"
fmt-time ::= ( [01] fmt-d | "2" [0-3] ) ":" [0-5] fmt-d ":" [0-5] fmt-d ( "." fmt-d{1,9} )? ( [Zz] | [-+] ( [01] fmt-d | "2" [0-3] ) ":" [0-5] fmt-d )
fmt-hex ::= [0-9a-fA-F]
fmt-atext ::= [a-zA-Z0-9!#$%&'*+/=?^_`{|}~\-]
fmt-label ::= [a-zA-Z0-9] ( [a-zA-Z0-9\-]{0,61} [a-zA-Z0-9] )?
format-date ::= fmt-date
format-time ::= fmt-time
format-date-time ::= fmt-date [Tt] fmt-time
format-uuid ::= fmt-hex{8} "-" fmt-hex{4} "-" fmt-hex{4} "-" fmt-hex{4} "-" fmt-hex{12}
format-email ::= fmt-atext+ ( "." fmt-atext+ )* "@" fmt-label ( "." fmt-label )+
)gbnf";

inline constexpr std::string_view kFormats[] = {"date", "time", "date-time", "uuid", "email"};

}  // namespace gufo::grammar
