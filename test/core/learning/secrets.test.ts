/**
 * What learning never keeps (issue 28, item 13), as a table: credentials and payment data in
 * several languages and formats are found, and facts that only speak of them, or hold numbers
 * that are not secrets, are kept.
 */
import { describe, expect, it } from 'vitest';
import { ibanChecks, luhn } from '../../../src/core/learning/secret-shapes.js';
import { holdsSecret, repeatsSecret, secretsIn, withoutSecrets } from '../../../src/core/learning/secrets.js';

/** [text, the value that must be found in it]. */
const secrets: ReadonlyArray<readonly [string, string]> = [
  // Passwords, in the words people use.
  ['My secret password is tangerine-42', 'tangerine-42'],
  ["ana's secret password is tangerine-42.", 'tangerine-42'],
  ['My password is tangerine', 'tangerine'],
  ['my gmail password is Sunflower!', 'Sunflower'],
  ['The wifi password is "open sesame 99"', 'open sesame 99'],
  ['My password for the bank is hunter2.', 'hunter2'],
  ['password: Xk9#mQ2p', 'Xk9#mQ2p'],
  ['pwd=correcthorse', 'correcthorse'],
  ['My password is now bluebird77', 'bluebird77'],
  ['tangerine-42 is my password', 'tangerine-42'],
  ['I use Rosebud1941 as my password for everything', 'Rosebud1941'],
  ['Mon mot de passe est soleil2024', 'soleil2024'],
  ["Le mot de passe du wifi c'est chaton-rose", 'chaton-rose'],
  ['Mon mdp : baguette!7', 'baguette!7'],
  ['Mein Passwort ist Sonnenblume', 'Sonnenblume'],
  ['Mein Passwort lautet „Zugspitze-2962“', 'Zugspitze-2962'],
  ['Mein WLAN-Passwort ist kaffee4ever', 'kaffee4ever'],
  ['Das Kennwort für mein Konto ist Bergsee', 'Bergsee'],
  ['Mi contraseña es girasol', 'girasol'],
  ['Mi contraseña del banco es sol-y-luna', 'sol-y-luna'],
  ['La mia password è pizza123', 'pizza123'],
  ['A minha senha é saudade9', 'saudade9'],
  ['Mijn wachtwoord is tulp2023', 'tulp2023'],
  // PINs and one-time codes.
  ['My PIN is 4821', '4821'],
  ['my pin code: 0000 1', '0000 1'],
  ['I use 4821 as my PIN', '4821'],
  ['Mon code PIN est 1234', '1234'],
  ['Meine PIN ist 9876', '9876'],
  ['Mi PIN es 5555', '5555'],
  ['Your verification code is 482 913', '482 913'],
  ['The code is 739104, it expires in 10 minutes', '739104'],
  ['Le code de vérification est 552 018', '552 018'],
  ['Ihr Bestätigungscode lautet 771204', '771204'],
  ['Tu código de verificación es 330912', '330912'],
  ['OTP 918273', '918273'],
  ['the door code is 1984#', '1984#'],
  ['Le digicode est 4B72A', '4B72A'],
  ['CVV 123', '123'],
  ['My locker combination is 12-24-36', '12-24-36'],
  ['Le cryptogramme au dos est 987', '987'],
  // Keys and tokens.
  ['My API key is sk-proj-4fT9xQ2mR7vL1nB8', 'sk-proj-4fT9xQ2mR7vL1nB8'],
  ['here is my token ghp_16C7e42F292c6912E7710c838347Ae178B4a', 'ghp_16C7e42F292c6912E7710c838347Ae178B4a'],
  ['AKIAIOSFODNN7EXAMPLE is the access key', 'AKIAIOSFODNN7EXAMPLE'],
  ['use xoxb-2048-1234567890-AbCdEfGh for the bot', 'xoxb-2048-1234567890-AbCdEfGh'],
  ['jwt: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.dBjftJeZ4CVPmB92K27uhbUJU1p1r', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.dBjftJeZ4CVPmB92K27uhbUJU1p1r'],
  ['Ma clé API est ab12-cd34-ef56', 'ab12-cd34-ef56'],
  ['Mein API-Schlüssel ist 7f3k9q2m', '7f3k9q2m'],
  ['Mi clave API es zz9-plural-z-alpha', 'zz9-plural-z-alpha'],
  ['the token is Qm9vS2VlcGVyMTIzNDU2Nzg5MA', 'Qm9vS2VlcGVyMTIzNDU2Nzg5MA'],
  ['-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----', '-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----'],
  ['my seed phrase is apple banana cherry dune eagle fjord', 'apple banana cherry dune eagle fjord'],
  // Card and bank numbers, by their checksums.
  ['My card is 4111 1111 1111 1111, expires 12/27', '4111111111111111'],
  ['card 5500-0000-0000-0004', '5500000000000004'],
  ['4012888888881881', '4012888888881881'],
  ['Ma carte : 3782 822463 10005', '378282246310005'],
  ['My IBAN is GB82 WEST 1234 5698 7654 32', 'GB82WEST12345698765432'],
  ['Mon IBAN : FR14 2004 1010 0505 0001 3M02 606', 'FR1420041010050500013M02606'],
  ['IBAN DE89370400440532013000 bitte', 'DE89370400440532013000'],
  ['mi cuenta es es9121000418450200051332', 'ES9121000418450200051332'],
  ['My account number is 12345678 and the sort code 12-34-56', '12345678'],
  ['Meine Kontonummer ist 0532 0130 00', '0532 0130 00'],
  ['Mi número de cuenta es 0049 1500', '0049 1500'],
  // Identity numbers.
  ['My SSN is 078-05-1120', '078-05-1120'],
  ['Mon numéro de sécurité sociale est 1850578006048', '1850578006048'],
  ['My passport number is X1234567', 'X1234567'],
];

/** Facts to keep: about secrets without them, and numbers that are none. */
const kept: readonly string[] = [
  'I forgot my password yesterday.',
  'I changed my PIN last week.',
  'My password manager is great.',
  'I use Bitwarden as my password manager.',
  'My password is too short, my bank says.',
  'My password is 8 characters long.',
  'Mi contraseña es muy larga.',
  "Mon mot de passe est changé tous les mois.",
  'Ich habe mein Passwort vergessen.',
  'I work in password security.',
  'My secret is that I love cheese.',
  'The secret to my cake is butter.',
  'La clave del éxito es la paciencia.',
  'I gave her a token of appreciation.',
  'I have 3 cats and 2 dogs.',
  'My zip code is 75011.',
  'Mon code postal est 69003.',
  'The dress code is 1920s glamour.',
  'I have written code since 2015.',
  'My phone number is +33 6 12 34 56 78.',
  'I was born on 1990-04-12.',
  'My card number ends in 4242.',
  'My order number was 4111 1111 1111 1112.',
  'The IBAN format starts with FR76.',
  'My bank is Crédit Agricole.',
  'I live at 12 Rue de Rivoli, Paris.',
  'I have diabetes and take insulin every morning.',
  'Ich wohne in der Hauptstraße 5 in Berlin.',
  'Vivo en la calle Mayor 3, Madrid.',
  'My sister is called Mia.',
  'My keys are under the mat.',
  'I pin my hair up with 2 pins.',
  'My email is ana@example.com.',
  'My website is https://example.com/AbCdEf1234567890XyZ.',
  'The key to happiness is patience.',
  'My favourite number is 42.',
  'I ran 10 km in 52 minutes.',
  'Mon secret : je chante sous la douche.',
];

describe('what learning never keeps', () => {
  it.each(secrets)('finds the secret in %j', (text, value) => {
    expect(holdsSecret(text)).toBe(true);
    const found = secretsIn(text).map((secret) => secret.value.replace(/\s/g, '').toUpperCase());
    expect(found).toContain(value.replace(/\s/g, '').toUpperCase());
    // Withheld, the value is not in what is sent on.
    const without = withoutSecrets(text);
    expect(without).toContain('[withheld]');
    expect(without.replace(/\s/g, '').toUpperCase()).not.toContain(value.replace(/\s/g, '').toUpperCase());
  });

  it.each(kept)('keeps %j', (text) => {
    expect(secretsIn(text)).toEqual([]);
    expect(holdsSecret(text)).toBe(false);
    expect(withoutSecrets(text)).toBe(text);
  });

  it('knows a secret a fact repeats without naming it, by the value said in the message', () => {
    const said = secretsIn('My secret password is tangerine-42');
    expect(repeatsSecret('ana logs in with Tangerine-42.', said)).toBe(true);
    expect(repeatsSecret('ana likes tangerines.', said)).toBe(false);
    const pin = secretsIn('My PIN is 48 21 99');
    expect(repeatsSecret('ana unlocks her phone with 482199.', pin)).toBe(true);
    expect(repeatsSecret('ana has 48 cats.', pin)).toBe(false);
  });

  it('checks cards by Luhn and bank numbers by the IBAN checksum', () => {
    expect(luhn('4111111111111111')).toBe(true);
    expect(luhn('4111111111111112')).toBe(false);
    expect(ibanChecks('GB82WEST12345698765432')).toBe(true);
    expect(ibanChecks('GB83WEST12345698765432')).toBe(false);
  });
});
