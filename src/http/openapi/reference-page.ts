import type { JsonSchema, OpenApiDocument, OpenApiOperation, OpenApiResponse } from './document.js';

/**
 * The OpenAPI document as one plain HTML page, rendered on the server: no script, and no
 * style, font or link outside the page, so it reads the same offline and behind a firewall.
 */
export function referencePage(document: OpenApiDocument): string {
  const operations = Object.entries(document.paths).flatMap(([path, byMethod]) =>
    Object.entries(byMethod).map(([method, operation]) => ({ path, method, operation })),
  );
  const sections = document.tags.map(({ name, description }) => {
    const inTag = operations.filter(({ operation }) => operation.tags.includes(name));
    return `<section><h2 id="${anchor('tag', name)}">${escape(name)}</h2><p>${text(description)}</p>${inTag.map((entry) => operationHtml(entry.method, entry.path, entry.operation)).join('')}</section>`;
  });
  const contents = document.tags.map(({ name }) => {
    const links = operations
      .filter(({ operation }) => operation.tags.includes(name))
      .map(({ method, path }) => `<li><a href="#${anchor(method, path)}"><code>${method.toUpperCase()} ${escape(path)}</code></a></li>`);
    return `<li><a href="#${anchor('tag', name)}">${escape(name)}</a><ul>${links.join('')}</ul></li>`;
  });
  const schemes = Object.entries(document.components.securitySchemes).map(
    ([name, scheme]) => `<p><strong>${escape(name)}</strong> (${escape(scheme.type)} ${escape(scheme.scheme)}): ${text(scheme.description)}</p>`,
  );
  const schemas = Object.entries(document.components.schemas).map(
    ([id, schema]) => `<section class="schema"><h3 id="${anchor('schema', id)}">${escape(id)}</h3>${schemaHtml(schema)}</section>`,
  );
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(document.info.title)}</title><style>${style}</style></head>
<body><main>
<h1>${escape(document.info.title)} <small>${escape(document.info.version)}</small></h1>
<p>${text(document.info.description)}</p>
<p>The same as OpenAPI ${escape(document.openapi)}: <a href="openapi.json">openapi.json</a>.</p>
<h2>Authentication</h2>${schemes.join('')}<p>Every endpoint needs it unless marked <em>no key</em>.</p>
<nav><h2>Endpoints</h2><ul>${contents.join('')}</ul></nav>
${sections.join('\n')}
<h2 id="schemas">Schemas</h2>${schemas.join('\n')}
</main></body></html>
`;
}

function operationHtml(method: string, path: string, operation: OpenApiOperation): string {
  const parameters = operation.parameters.length
    ? `<h4>Parameters</h4><table><tr><th>name</th><th>in</th><th>schema</th></tr>${operation.parameters
        .map((parameter) => `<tr><td><code>${escape(parameter.name)}</code>${parameter.required ? ' <em>required</em>' : ''}</td><td>${parameter.in}</td><td>${schemaHtml(parameter.schema)}</td></tr>`)
        .join('')}</table>`
    : '';
  const body = operation.requestBody
    ? `<h4>Body${operation.requestBody.required ? '' : ' (optional)'}</h4>${Object.entries(operation.requestBody.content)
        .map(([mediaType, { schema }]) => `<p><code>${escape(mediaType)}</code></p>${schemaHtml(schema)}`)
        .join('')}`
    : '';
  const answers = Object.entries(operation.responses)
    .map(([status, answer]) => `<tr><td>${escape(status)}</td><td>${responseHtml(answer)}</td></tr>`)
    .join('');
  return `<article id="${anchor(method, path)}">
<h3><span class="method">${method.toUpperCase()}</span> <code>${escape(path)}</code>${operation.security?.length === 0 ? ' <em>no key</em>' : ''}</h3>
<p>${escape(operation.summary)}</p>${operation.description ? `<p>${text(operation.description)}</p>` : ''}
${parameters}${body}<h4>Answers</h4><table>${answers}</table></article>`;
}

function responseHtml(answer: OpenApiResponse | { $ref: string }): string {
  if ('$ref' in answer) return `<a href="#${anchor('schema', 'Error')}">Error</a>`;
  const headers = Object.entries(answer.headers ?? {}).map(([name, header]) => `<br>Header <code>${escape(name)}</code>: ${text(header.description)}`);
  const content = Object.entries(answer.content ?? {}).map(
    ([mediaType, { schema }]) => `<br><code>${escape(mediaType)}</code>${schema ? ` ${schemaHtml(schema)}` : ''}`,
  );
  return `${text(answer.description)}${headers.join('')}${content.join('')}`;
}

/** A schema as a reader wants it: objects as tables of their members, references as links. */
function schemaHtml(schema: JsonSchema): string {
  if (typeof schema.$ref === 'string') {
    const id = schema.$ref.split('/').pop()!;
    return `<a href="#${anchor('schema', id)}">${escape(id)}</a>`;
  }
  const alternatives = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (alternatives) return alternatives.map(schemaHtml).join(' or ') + notes(schema);
  if (schema.type === 'object' && schema.properties) {
    const required = new Set((schema.required as string[] | undefined) ?? []);
    const rows = Object.entries(schema.properties as Record<string, JsonSchema>).map(
      ([name, member]) => `<tr><td><code>${escape(name)}</code>${required.has(name) ? ' <em>required</em>' : ''}</td><td>${schemaHtml(member)}</td></tr>`,
    );
    const closed = schema.additionalProperties === false ? '<p class="note">No other members.</p>' : '';
    return `${schema.description ? `<p>${text(String(schema.description))}</p>` : ''}<table>${rows.join('')}</table>${closed}`;
  }
  if (schema.type === 'array' && schema.items) return `array of ${schemaHtml(schema.items as JsonSchema)}${notes(schema)}`;
  const type = Array.isArray(schema.type) ? schema.type.join(' or ') : String(schema.type ?? 'any');
  return `${escape(type)}${notes(schema)}`;
}

const constraints = ['format', 'contentMediaType', 'minimum', 'maximum', 'minLength', 'maxLength', 'minItems', 'maxItems', 'pattern', 'default'];

function notes(schema: JsonSchema): string {
  const parts = constraints.filter((key) => schema[key] !== undefined).map((key) => `${key} <code>${escape(String(schema[key]))}</code>`);
  if (schema.const !== undefined) parts.unshift(`always <code>${escape(JSON.stringify(schema.const))}</code>`);
  if (Array.isArray(schema.enum)) parts.unshift(`one of ${schema.enum.map((value) => `<code>${escape(String(value))}</code>`).join(', ')}`);
  const description = typeof schema.description === 'string' ? ` — ${text(schema.description)}` : '';
  return (parts.length ? ` (${parts.join('; ')})` : '') + description;
}

/** Escapes, then shows `code` spans as code. */
function text(value: string): string {
  return escape(value).replace(/`([^`]+)`/g, '<code>$1</code>');
}

function escape(value: string): string {
  return value.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

function anchor(kind: string, name: string): string {
  return `${kind}-${name.replace(/[^\w]+/g, '-')}`;
}

const style = `body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d1d1f}main{max-width:60rem;margin:auto;padding:1rem 2rem}
code{font:13px ui-monospace,monospace;background:#f2f2f4;padding:0 .2em;border-radius:3px}
table{border-collapse:collapse;margin:.3rem 0}td,th{border:1px solid #ddd;padding:.2rem .5rem;vertical-align:top;text-align:left}
article{border-top:1px solid #ccc;padding:.5rem 0}.method{font-weight:700;color:#05a}.note{color:#666;font-size:13px;margin:0}h4{margin:.6rem 0 .2rem}`;
