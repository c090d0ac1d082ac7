/**
 * Tool definitions for the harmony developer message: OpenAI JSON schemas rendered as a TypeScript-like
 * `namespace functions { ... }`, the form gpt-oss was trained to read.
 */
import type { ToolSpec } from './messages.ts';

type Schema = Record<string, unknown>;

const isSchema = (value: unknown): value is Schema => typeof value === 'object' && value !== null && !Array.isArray(value);

function commentLines(text: string): string {
  return text
    .split('\n')
    .map((line) => (line.length > 0 ? `// ${line}` : '//'))
    .join('\n');
}

function literal(value: unknown): string {
  return JSON.stringify(value) ?? 'undefined';
}

/** A JSON schema as a TypeScript type expression. */
export function schemaToType(schema: unknown): string {
  if (!isSchema(schema)) return 'any';
  let type: string;
  const variants = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(schema.enum)) {
    type = schema.enum.map(literal).join(' | ');
  } else if ('const' in schema) {
    type = literal(schema.const);
  } else if (Array.isArray(variants)) {
    type = variants.map(schemaToType).join(' | ');
  } else if (Array.isArray(schema.type)) {
    type = schema.type.map((t) => schemaToType({ ...schema, type: t })).join(' | ');
  } else {
    switch (schema.type) {
      case 'string':
      case 'boolean':
      case 'null':
        type = schema.type;
        break;
      case 'number':
      case 'integer':
        type = 'number';
        break;
      case 'array': {
        const item = schemaToType(schema.items);
        type = item.includes(' | ') ? `Array<${item}>` : `${item}[]`;
        break;
      }
      case 'object':
        type = isSchema(schema.properties) && Object.keys(schema.properties).length > 0 ? objectType(schema) : 'object';
        break;
      default:
        type = 'any';
    }
  }
  if (schema.nullable === true && !type.split(' | ').includes('null')) type += ' | null';
  return type;
}

/** `{\n// description\nname?: type, // default: x\n}`: one property per line, as in the harmony docs. */
function objectType(schema: Schema): string {
  const properties = schema.properties as Record<string, unknown>;
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const lines: string[] = [];
  for (const [name, property] of Object.entries(properties)) {
    if (isSchema(property) && typeof property.description === 'string' && property.description.length > 0) {
      lines.push(commentLines(property.description));
    }
    let line = `${name}${required.has(name) ? '' : '?'}: ${schemaToType(property)},`;
    if (isSchema(property) && 'default' in property) line += ` // default: ${literal(property.default)}`;
    lines.push(line);
  }
  return `{\n${lines.join('\n')}\n}`;
}

export function renderToolType(tool: ToolSpec): string {
  const { name, description, parameters } = tool.function;
  const head = description ? `${commentLines(description)}\n` : '';
  const hasParams = isSchema(parameters) && isSchema(parameters.properties) && Object.keys(parameters.properties).length > 0;
  return `${head}type ${name} = ${hasParams ? `(_: ${objectType(parameters)})` : '()'} => any;`;
}

export function renderFunctionsNamespace(tools: readonly ToolSpec[]): string {
  const names = new Set<string>();
  for (const tool of tools) {
    const name = tool.function.name;
    if (!/^[A-Za-z_][A-Za-z0-9_.-]*$/.test(name)) throw new Error(`tool name ${JSON.stringify(name)} cannot be rendered (letters, digits, _ . - only)`);
    if (names.has(name)) throw new Error(`tool ${name} is declared twice`);
    names.add(name);
  }
  const body = tools.map((tool) => `${renderToolType(tool)}\n\n`).join('');
  return `## functions\n\nnamespace functions {\n\n${body}} // namespace functions`;
}
