/**
 * What learning never keeps, whatever the engine proposes: credentials and payment data
 * (passwords, PINs, keys and tokens, one-time codes, recovery phrases, card and bank numbers)
 * and identity numbers. A deterministic filter, in the languages people talk to characters in
 * (English, French, German, Spanish, Italian, Portuguese, Dutch and a few words more): a secret
 * is known by its shape (secret-shapes.ts: Luhn, IBAN, token prefixes, random strings) or by
 * the word naming it followed by a value ("my password is …", "PIN: 4821", "mon mot de passe
 * est …", "tangerine-42 is my password"). A fact about a secret without its value ("she forgot
 * her password") is kept.
 */
import { type SecretKind, type SecretSpan, secretShapesIn } from './secret-shapes.js';

export type { SecretKind, SecretSpan } from './secret-shapes.js';

/** What a value after the word must look like to be the secret. */
type ValueRule =
  /** Any word after "is" or ":" (a password may be a plain word); without them, one that looks made up. */
  | 'word'
  /** One that looks made up: a digit, a symbol, mixed case, or long. */
  | 'code'
  /** Three digits or more (PINs, one-time codes, account numbers). */
  | 'digits'
  /** The rest of the sentence (a recovery phrase is words). */
  | 'phrase';

interface Keyword {
  kind: SecretKind;
  rule: ValueRule;
  /** Alternatives, in the regex syntax, matched case-insensitively as whole words. */
  words: readonly string[];
}

/**
 * "code" not of a secret: a zip code, a dress code, a code of conduct. Put before the word
 * (lookbehind) and after it (lookahead).
 */
const notSecretBefore = String.raw`(?<!(?:zip|postal|post|area|country|dress|source|morse|promo|discount|coupon|bar|qr|colou?r|airport|dial(?:l?ing)?|iso|hs|tax|language|station|genetic|penal|civil|the\s+da\s+vinci)[\s-])`;
const notSecretAfter = String.raw`(?!\s+(?:postale?|pays|of\s+conduct|de\s+conduite|civil|pénal|penal|source|barre))`;

const keywords: readonly Keyword[] = [
  {
    kind: 'password',
    rule: 'word',
    words: [
      String.raw`pass\s?words?`, 'passwd', 'pwd', String.raw`pass\s?phrases?`, String.raw`pass\s?codes?`,
      String.raw`mots?\s+de\s+passe`, 'mdp',
      String.raw`(?:\p{L}+-?)?(?:passwort|kennwort)(?:e|es|s)?`,
      'contraseñas?', 'contrasenas?',
      String.raw`parola\s+d'ordine`, 'senhas?', 'wachtwoord(?:en)?', 'hasło', String.raw`şifre\p{L}*`, 'lösenord', 'passord', 'adgangskode', 'пароль',
    ],
  },
  {
    kind: 'recovery phrase',
    rule: 'phrase',
    words: [
      String.raw`seed(?:\s+phrase|\s+words)?`, String.raw`recovery\s+(?:phrase|words)`, String.raw`mnemonic(?:\s+phrase)?`,
      String.raw`phrase\s+(?:de\s+récupération|secrète|mnémonique)`, String.raw`wiederherstellungs(?:phrase|sätze?)`, String.raw`frase\s+(?:de\s+recuperación|semilla)`,
    ],
  },
  {
    kind: 'key or token',
    rule: 'code',
    words: [
      String.raw`api[\s-]?keys?`, String.raw`(?:secret|private|access|license|licence|product|wifi|wi-fi|wpa)\s+keys?`, String.raw`(?:access|auth|authentication|bearer|bot|refresh|session)\s+tokens?`, 'tokens?',
      'jetons?', String.raw`clés?\s+(?:api|secrètes?|privées?|d'accès|de\s+licence|wifi)`, 'clé',
      String.raw`api-schlüssel`, String.raw`(?:privater|geheimer)\s+schlüssel`, String.raw`\p{L}*schlüssel`,
      String.raw`claves?(?:\s+(?:api|secretas?|privadas?|de\s+acceso))?`, String.raw`chiave(?:\s+(?:api|privata|segreta))?`, String.raw`chave(?:\s+(?:api|privada|secreta))?`, 'sleutel',
    ],
  },
  {
    kind: 'identity number',
    rule: 'code',
    words: [
      'ssn', String.raw`social\s+security(?:\s+numbers?)?`, String.raw`passport(?:\s+numbers?)?`, String.raw`national\s+(?:id|insurance)(?:\s+numbers?)?`, String.raw`tax\s+id`,
      String.raw`numéro\s+de\s+(?:sécurité\s+sociale|passeport)`, String.raw`sozialversicherungsnummer`, String.raw`steuer-?id`, String.raw`(?:reise)?passnummer`, 'personalausweisnummer',
      'dni', 'nie', 'nif', String.raw`número\s+de\s+(?:la\s+)?seguridad\s+social`, String.raw`número\s+de\s+pasaporte`, String.raw`codice\s+fiscale`, 'cpf', 'bsn',
    ],
  },
  {
    kind: 'bank number',
    rule: 'digits',
    words: [
      String.raw`(?:bank\s+)?account\s+numbers?`, String.raw`routing\s+numbers?`, String.raw`sort\s+codes?`, 'iban', String.raw`(?:credit|debit|bank)\s+card(?:\s+numbers?)?`, String.raw`card\s+numbers?`,
      String.raw`numéro\s+de\s+(?:compte|carte)(?:\s+bancaire)?`, 'rib', String.raw`carte\s+bancaire`, String.raw`(?:\p{L}+)?kontonummer`, 'bankleitzahl', 'blz', String.raw`(?:kredit)?kartennummer`,
      String.raw`número\s+de\s+(?:cuenta|tarjeta)`, String.raw`cuenta\s+bancaria`, 'clabe', String.raw`numero\s+di\s+(?:conto|carta)`, String.raw`número\s+d[ao]\s+(?:conta|cartão)`, 'rekeningnummer',
    ],
  },
  {
    kind: 'one-time code',
    rule: 'digits',
    words: [
      String.raw`(?:verification|confirmation|security|login|sign-in|signin|auth|authentication|authenticator|sms|backup|recovery|access|door|alarm|gate|safe|secret|one[\s-]time)\s+(?:pass)?codes?`,
      String.raw`one[\s-]time\s+passwords?`, 'otp', String.raw`2fa(?:\s+codes?)?`, String.raw`mfa(?:\s+codes?)?`, 'cvv2?', 'cvc2?', 'csc', String.raw`card\s+security\s+codes?`,
      String.raw`codes?\s+(?:secret|confidentiel|de\s+(?:vérification|confirmation|sécurité|validation|connexion|la\s+porte)|à\s+usage\s+unique|d'accès)`, 'cryptogramme', 'digicode',
      String.raw`(?:bestätigungs|sicherheits|verifizierungs|zugangs|einmal|anmelde|geheim|tür|alarm)codes?`,
      String.raw`códigos?\s+(?:de\s+)?(?:verificación|seguridad|confirmación|acceso|un\s+solo\s+uso|verificação|segurança)`, String.raw`codice\s+(?:di\s+)?(?:verifica|sicurezza|segreto|accesso)`,
      String.raw`(?:verificatie|toegangs|beveiligings)codes?`,
      String.raw`(?:\p{L}+\s+)?combinations?`, 'combinaison', 'kombination', 'combinación', 'combinazione',
      `${notSecretBefore}(?:codes?|código|codice|kode)${notSecretAfter}`, 'secrets?', 'secreto', 'geheimnis',
    ],
  },
  {
    kind: 'pin',
    rule: 'digits',
    words: [String.raw`pin(?:[\s-]?(?:codes?|numbers?|nummer))?`, String.raw`(?:codes?|código|codice)\s+pin`, String.raw`número\s+pin`, 'pincode', 'geheimzahl'],
  },
];

/** Every keyword, longest first within its kind; one regex, each alternative a named kind. */
const keywordPattern = new RegExp(
  String.raw`(?<![\p{L}\p{N}_])(?:` + keywords.map((keyword, index) => `(?<k${index}>${keyword.words.join('|')})`).join('|') + String.raw`)(?![\p{L}\p{N}])`,
  'giu',
);

/** Between the word and its value: "is", ":" and their kin ("my password for Gmail is …"). */
const connectors = new Set([
  'is', 'was', 'are', 'were', 'be', 'reads', 'equals', '=', ':', '-', '->', '→', '–', '—',
  'est', 'était', 'sera', "c'est", 'ist', 'lautet', 'war', 'heißt', 'sind', 'es', 'era', 'será', 'son', 'è', "e'", 'é', 'sono', 'são', 'zijn', 'jest', 'är', 'er',
]);
/** Words that may come after the connector before the value: "is now", "est maintenant". */
const connectorFollowers = new Set(['now', 'still', 'just', 'simply', 'maintenant', 'toujours', 'jetzt', 'immer', 'noch', 'ahora', 'ora', 'agora', 'nu', 'simplement', 'einfach', 'literally', 'actually']);
/** Words a qualifier between the word and the connector may start with: "password for my bank". */
const prepositions = new Set([
  'for', 'on', 'at', 'of', 'to', 'pour', 'de', 'du', 'des', "d'", 'sur', 'à', 'au', 'chez', 'für', 'bei', 'von', 'vom', 'zum', 'zur', 'an', 'auf', 'der', 'del', 'para', 'en', 'per', 'di', 'della', 'su', 'do', 'da', 'van', 'voor', 'bij',
]);
/** Things a password or PIN is for, said without a preposition: "my wifi password is …" comes before; "mon mot de passe wifi est …" after. */
const serviceWords = new Set(['wifi', 'wi-fi', 'wlan', 'bank', 'banking', 'email', 'e-mail', 'mail', 'gmail', 'phone', 'téléphone', 'handy', 'teléfono', 'laptop', 'computer', 'ordinateur', 'account', 'compte', 'konto', 'cuenta', 'admin', 'root', 'router', 'box', 'netflix', 'steam', 'discord', 'icloud', 'apple', 'google', 'amazon', 'paypal']);
/**
 * After "is", words that describe a password rather than be it: "my password is too short",
 * "mi contraseña es muy larga", "mon mot de passe est changé".
 */
const describingWords = new Set(
  (
    'not never no too very so really quite still also just always the a an my your his her their our its it this that same different strong weak long short easy hard simple ' +
    'complex complicated secure safe unsafe new old wrong right correct incorrect expired changed forgotten lost stolen hacked leaked written saved stored in on at somewhere ' +
    'secret private encrypted hidden required needed mandatory unique mine yours something nothing what how why where which who case-sensitive ' +
    "pas ne n' très trop toujours encore le la les l' un une mon ma mes ton ta son sa notre votre leur sur dans facile difficile longue court courte compliqué sécurisé nouveau nouvelle " +
    'changé oublié perdu volé écrit faux fausse différent ' +
    'nicht kein keine sehr zu immer noch auch der die das ein eine mein meine dein deine sein seine ihr ihre in auf sicher lang kurz einfach schwer kompliziert neu alt falsch ' +
    'geändert vergessen geheim abgelaufen anders ' +
    'no muy demasiado siempre todavía también el los las un una mi mis tu su en fácil difícil largo larga corto corta segura seguro nueva nuevo vieja viejo cambiada olvidada ' +
    'secreta incorrecta distinta ' +
    'non molto troppo il lo gli uno mio mia tua facile lunga lungo nuova nuovo sicura sicuro cambiata dimenticata ' +
    'não muito o os um uma meu minha fácil longa nova segura trocada esquecida ' +
    'niet heel erg te de het een mijn makkelijk moeilijk nieuw veilig vergeten'
  ).split(' '),
);
/** Words after a number that make it a length, not a value: "my password is 8 characters long". */
const lengthWords = /^(?:characters?|chars?|letters?|digits?|numbers?|symbols?|long|caractères?|chiffres?|lettres?|zeichen|ziffern|stellen|stellig|buchstaben|caracteres?|dígitos?|letras?|caratteri|cifre|cijfers?|tekens?)$/iu;
/** "tangerine-42 is my password", "j'utilise 4821 comme code PIN". */
const reverseLink = /(?:^|[\s(])(?<value>"[^"]{3,100}"|“[^”]{3,100}”|«[^»]{3,100}»|[^\s"“«]{3,100}?)[,.]?\s+(?:is|was|est|c'est|ist|es|era|è|é|as|comme|als|como|come|is\s+used\s+as|sert\s+de)\s+(?:(?:still|now|also|toujours|aussi|auch|noch|también)\s+)?(?:my|our|the|his|her|their|mon|ma|notre|le|la|son|sa|leur|mein|meine|meinem|unser|unsere|das|der|die|sein|ihr|mi|nuestra|nuestro|el|la|su|il\s+mio|la\s+mia|il|o\s+meu|a\s+minha|o|a|mijn|het|de)?\s*(?:\p{L}+\s+)?$/iu;
const sentenceEnd = /[.!?](?=\s|$)|\n/u;
const quotes: Record<string, string> = { '"': '"', '“': '”', '«': '»', '„': '“', "'": "'", '‘': '’', '`': '`' };

/** Every secret the text holds, by shape or by the word naming it. */
export function secretsIn(text: string): SecretSpan[] {
  const found = secretShapesIn(text);
  for (const match of text.matchAll(keywordPattern)) {
    const index = keywords.findIndex((_, each) => match.groups?.[`k${each}`] !== undefined);
    const keyword = keywords[index];
    if (!keyword) continue;
    const start = match.index;
    const end = start + match[0].length;
    const after = valueAfter(text, end, keyword.rule);
    if (after) found.push({ ...after, kind: keyword.kind });
    const before = valueBefore(text, start, end, keyword.rule);
    if (before) found.push({ ...before, kind: keyword.kind });
  }
  return found.sort((first, second) => first.start - second.start);
}

/**
 * Whether a proposed fact may be stored: it holds no secret, in either of its forms, and
 * repeats none of those said in the messages it was learned from.
 */
export function keepable(fact: { text: string; firstPerson: string }, said: readonly SecretSpan[]): boolean {
  return [fact.text, fact.firstPerson].every((text) => !holdsSecret(text) && !repeatsSecret(text, said));
}

/** Whether the text holds a secret (or a value already withheld from it). */
export function holdsSecret(text: string): boolean {
  return text.includes(withheld) || secretsIn(text).length > 0;
}

/** What a secret's place is taken by in what is sent on. */
export const withheld = '[withheld]';

/** The text with every secret it holds replaced by `[withheld]`. */
export function withoutSecrets(text: string): string {
  const spans = secretsIn(text);
  if (spans.length === 0) return text;
  let result = '';
  let at = 0;
  for (const span of spans) {
    if (span.end <= at) continue;
    result += text.slice(at, Math.max(at, span.start)) + withheld;
    at = span.end;
  }
  return result + text.slice(at);
}

/**
 * Whether `text` repeats one of these secrets' values, in other words: a fact that quotes a
 * password without the word "password" ("ana logs in with tangerine-42"). Numbers are compared
 * by their digits, whatever spaces or dashes group them.
 */
export function repeatsSecret(text: string, secrets: readonly SecretSpan[]): boolean {
  const lower = text.toLowerCase();
  const numbers = [...text.matchAll(/\d(?:[\d .-]*\d)?/g)].map((run) => run[0].replace(/\D/g, ''));
  return secrets.some((secret) => {
    const value = secret.value.toLowerCase();
    if (/^[\d\s.-]+$/.test(value)) {
      const digits = value.replace(/\D/g, '');
      return digits.length >= 3 && numbers.some((number) => number.includes(digits));
    }
    return value.length >= 3 && lower.includes(value);
  });
}

interface Token {
  text: string;
  start: number;
  end: number;
}

/** The value the word is followed by ("is tangerine-42", ": 4821", "for my bank is …"), if it is one by the rule. */
function valueAfter(text: string, from: number, rule: ValueRule): Omit<SecretSpan, 'kind'> | undefined {
  const rest = text.slice(from, from + 240);
  const stop = rest.search(sentenceEnd);
  const sentence = stop < 0 ? rest : rest.slice(0, stop);
  // "password:" or "PIN=" with the value right after: the sign is the connector.
  const glue = /^\s*[:=]/.exec(sentence)?.[0].length ?? 0;
  const glued = glue > 0;
  const tokens = tokenize(sentence.slice(glue), from + glue);
  for (let qualifier = 0; qualifier <= Math.min(4, tokens.length); qualifier++) {
    if (qualifier > 0 && !qualifies(tokens.slice(0, qualifier))) break;
    let at = qualifier;
    let connected = glued && qualifier === 0;
    if (at < tokens.length && connectors.has(tokens[at]!.text.toLowerCase())) {
      connected = true;
      at++;
    } else if (at < tokens.length && /^[:=]$|[:=]$/.test(tokens[at]!.text) && tokens[at]!.text.length > 1 && qualifier > 0) {
      // "password for Gmail: …": the colon glued to the qualifier's last word.
      connected = true;
    }
    while (connected && at < tokens.length && connectorFollowers.has(tokens[at]!.text.toLowerCase())) at++;
    if (qualifier > 0 && !connected && rule !== 'digits') continue;
    const value = valueAt(sentence, from, tokens, at, rule);
    if (value && isSecretValue(value, rule, connected, tokens, at)) return value;
  }
  return undefined;
}

/** A qualifier names what the secret is for: a preposition and a few words, or a service's name. */
function qualifies(tokens: readonly Token[]): boolean {
  const [first] = tokens;
  if (!first) return false;
  if (tokens.some((token) => connectors.has(token.text.toLowerCase()) || /[:=]$/.test(token.text.slice(0, -1)))) return false;
  if (prepositions.has(first.text.toLowerCase()) || first.text.toLowerCase().startsWith("d'")) return tokens.length <= 4;
  return tokens.length <= 2 && tokens.every((token) => serviceWords.has(token.text.toLowerCase().replace(/[:=]$/, '')) || /^\p{Lu}/u.test(token.text));
}

/** The value starting at token `at`: a quoted run, the rest of a phrase, grouped digits, or one token. */
function valueAt(sentence: string, offset: number, tokens: readonly Token[], at: number, rule: ValueRule): Omit<SecretSpan, 'kind'> | undefined {
  const first = tokens[at];
  if (!first) return undefined;
  const opening = first.text[0]!;
  const closing = quotes[opening];
  if (closing !== undefined) {
    const close = sentence.indexOf(closing, first.start - offset + 1);
    if (close > first.start - offset + 1) return { start: first.start + 1, end: offset + close, value: sentence.slice(first.start - offset + 1, close) };
  }
  if (rule === 'phrase') {
    const last = tokens.at(-1)!;
    return { start: first.start, end: last.end, value: sentence.slice(first.start - offset, last.end - offset) };
  }
  if (rule === 'digits' && /^\d+[.,;]?$/.test(first.text)) {
    // "123 456", "12-34-56": the groups that follow make one number.
    let last = at;
    while (last + 1 < tokens.length && /^\d+[.,;]?$/.test(tokens[last + 1]!.text) && !/[.,;]$/.test(tokens[last]!.text)) last++;
    const end = tokens[last]!.end - (/[.,;]$/.test(tokens[last]!.text) ? 1 : 0);
    return { start: first.start, end, value: sentence.slice(first.start - offset, end - offset) };
  }
  const stripped = stripPunctuation(first);
  return stripped.text === '' ? undefined : { start: stripped.start, end: stripped.end, value: stripped.text };
}

function isSecretValue(value: Omit<SecretSpan, 'kind'>, rule: ValueRule, connected: boolean, tokens: readonly Token[], at: number): boolean {
  const text = value.value;
  if (text === withheld || text.includes(withheld)) return true;
  // A number followed by "characters" or "digits" is a length.
  const next = tokens[at + 1];
  if (/^\d{1,2}$/.test(text) && next && lengthWords.test(stripPunctuation(next).text)) return false;
  switch (rule) {
    case 'digits':
      return (text.match(/\d/g)?.length ?? 0) >= 3 && !lengthAfter(tokens, at, text);
    case 'code':
      return looksMadeUp(text);
    case 'word':
      if (!connected) return looksMadeUp(text);
      return text.length >= 3 && !describingWords.has(text.toLowerCase()) && !/^\p{N}{1,2}$/u.test(text);
    case 'phrase':
      return connected && text.split(/\s+/).length >= 3 && !describingWords.has(text.split(/\s+/)[0]!.toLowerCase());
  }
}

/** "my PIN is 4 digits" reads "4"; a value of digits followed by a length word is a length. */
function lengthAfter(tokens: readonly Token[], at: number, text: string): boolean {
  const groups = text.split(/[\s.-]+/).length;
  const next = tokens[at + groups];
  return /^\d{1,2}$/.test(text) && next !== undefined && lengthWords.test(stripPunctuation(next).text);
}

/** A digit, a symbol inside, mixed case, or long: what a made-up string looks like, not a word. */
function looksMadeUp(text: string): boolean {
  if (text.length < 4) return false;
  if (/\p{N}/u.test(text)) return true;
  if (/\p{L}[-_!@#$%^&*+=/\\.~|]+\p{L}?/u.test(text) && text.length >= 6) return true;
  if (/\p{Ll}\p{Lu}/u.test(text)) return true;
  return text.length >= 16;
}

/** The value before the word: "tangerine-42 is my password", "I use 4821 as my PIN". */
function valueBefore(text: string, start: number, end: number, rule: ValueRule): Omit<SecretSpan, 'kind'> | undefined {
  // Only where the word ends its clause ("… is my password." / "… as my PIN for the bank"), not "… is my password manager".
  const after = text.slice(end, end + 40);
  if (!/^\s*(?:[.,;:!?)]|$|\s(?:for|pour|für|para|per|voor|on|at|sur|bei|en)\s)/iu.test(after)) return undefined;
  const lineStart = Math.max(text.lastIndexOf('\n', start - 1) + 1, start - 160);
  const head = text.slice(lineStart, start);
  const clauseStart = Math.max(...['. ', '! ', '? ', '; '].map((mark) => head.lastIndexOf(mark) + mark.length - 1), 0);
  const clause = head.slice(clauseStart);
  const match = reverseLink.exec(clause);
  const raw = match?.groups?.['value'];
  if (!raw || match.index === undefined) return undefined;
  const rawStart = lineStart + clauseStart + clause.indexOf(raw, match.index);
  const unquoted = /^["“«]/.test(raw) ? { text: raw.slice(1, -1), start: rawStart + 1, end: rawStart + raw.length - 1 } : stripPunctuation({ text: raw, start: rawStart, end: rawStart + raw.length });
  const value = unquoted.text;
  if (value === '' || describingWords.has(value.toLowerCase()) || /^(?:it's|that's|this|what|which|who|i|je|ich|yo|io|eu|ik|here|voici|voilà|hier|aquí|ecco|aqui)$/iu.test(value)) return undefined;
  const secret = rule === 'digits' ? (value.match(/\d/g)?.length ?? 0) >= 3 : rule === 'code' ? looksMadeUp(value) : rule === 'word' ? value.length >= 3 : false;
  return secret ? { start: unquoted.start, end: unquoted.end, value } : undefined;
}

function tokenize(sentence: string, offset: number): Token[] {
  return [...sentence.matchAll(/\S+/g)].map((match) => ({ text: match[0], start: offset + match.index, end: offset + match.index + match[0].length }));
}

/** The token less the punctuation around it: `"tangerine-42".` is `tangerine-42`. */
function stripPunctuation(token: Token): Token {
  const leading = /^[("“«„'‘`\[]*/u.exec(token.text)![0].length;
  const trailing = /[)"”»'’`\].,;:!?]*$/u.exec(token.text.slice(leading))![0].length;
  const text = token.text.slice(leading, token.text.length - trailing);
  return { text, start: token.start + leading, end: token.start + leading + text.length };
}
