// ajv (JSON Schema 2020-12) as the functional suite uses it to check constrained answers, with
// the string formats that src/grammar/schema_formats.h compiles, defined from RFC 3339,
// RFC 4122 and RFC 5322 as that header reads them (ajv-formats is not a dependency, and
// ajv alone would refuse or ignore every `format`).
import assert from 'node:assert/strict';
import Ajv2020 from 'ajv/dist/2020.js';

export const ajv = new Ajv2020({ strict: false, allErrors: true });

const atext = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]";
const label = '[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?';
ajv.addFormat('email', new RegExp(`^${atext}+(\\.${atext}+)*@${label}(\\.${label})+$`));
ajv.addFormat('uuid', /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/);

// A full-date that exists (the day within its month, 29 February in leap years only).
const isDate = (s) => /^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(Date.parse(`${s}T00:00:00Z`)) &&
  new Date(`${s}T00:00:00Z`).toISOString().startsWith(s);
// A full-time without leap seconds (schema_formats.h is stricter than RFC 3339 there).
const time = /^([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?([Zz]|[-+]([01]\d|2[0-3]):[0-5]\d)$/;
ajv.addFormat('date', { validate: isDate });
ajv.addFormat('time', time);
ajv.addFormat('date-time', { validate: (s) => /^.{10}[Tt]/.test(s) && isDate(s.slice(0, 10)) && time.test(s.slice(11)) });

const compiled = new Map();
// The validate function of `schema`, compiled once per schema object.
export function validatorOf(schema) {
  if (!compiled.has(schema)) compiled.set(schema, ajv.compile(schema));
  return compiled.get(schema);
}

// The JSON value of `text`, asserted to validate against `schema`; `where` names the answer.
export function assertValid(text, schema, where) {
  let value;
  assert.doesNotThrow(() => { value = JSON.parse(text); }, `${where}: not JSON: ${JSON.stringify(text)}`);
  const validate = validatorOf(schema);
  assert.ok(validate(value), `${where}: ${text} fails its schema: ${ajv.errorsText(validate.errors)}`);
  return value;
}
