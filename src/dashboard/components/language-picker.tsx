import { inWords } from '../api.js';
import { useId, useMemo, useState } from 'preact/hooks';
import { useFieldError } from './form.js';

/**
 * The languages the picker offers by name: ISO 639-1's (each a registered BCP 47 tag), and the regional and script
 * forms people ask for most. Any other registered tag is added by its code ("Or a language tag"); the API checks each
 * against the IANA registry when the settings are saved (src/platforms/languages.ts).
 */
const OFFERED = (
  'aa ab ae af ak am an ar as av ay az ba be bg bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv dz ee el en eo es ' +
  'et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii ik io is it iu ja jv ka kg ki ' +
  'kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no ' +
  'nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr ss st su sv sw ta te ' +
  'tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu ' +
  'en-GB en-US es-419 fr-CA pt-BR pt-PT sr-Latn zh-Hans zh-Hant'
).split(' ');

/** Names of languages in the browser's own languages (`navigator.languages`), or undefined where it knows none. */
function languageNames(): (tag: string) => string | undefined {
  let names: Intl.DisplayNames | undefined;
  try {
    names = new Intl.DisplayNames(navigator.languages.length ? [...navigator.languages] : undefined, { type: 'language', fallback: 'none' });
  } catch {
    return () => undefined;
  }
  return (tag) => {
    try {
      return names!.of(tag) ?? undefined;
    } catch {
      return undefined; // a tag the browser cannot read
    }
  };
}

/** A tag as BCP 47 writes it (`pt-br` → `pt-BR`), or undefined when it is not a well-formed tag. */
function canonical(tag: string): string | undefined {
  try {
    return Intl.getCanonicalLocales(tag.trim())[0];
  } catch {
    return undefined;
  }
}

interface LanguagePickerProps {
  legend: string;
  hint: string;
  /** BCP 47 tags, in the order chosen. */
  value: string[];
  onChange: (tags: string[]) => void;
  max: number;
  /** The server's message about the languages (`languages.2: is not a registered language…`), shown under the picker. */
  error: string | undefined;
}

/**
 * Languages chosen by name, kept as BCP 47 tags: each chosen one with its Remove button, then a select of the languages
 * the browser can name (type-ahead by name, in the browser's own language), and a field for any other tag by its code.
 * Every control is labelled and a plain form control, so it works by keyboard and screen reader as any form does; the
 * focus goes where the next step is (back to the select after an add, to a neighbour after a removal), and each change
 * is announced.
 */
export function LanguagePicker({ legend, hint, value, onChange: change, max, error: given }: LanguagePickerProps) {
  const id = useId();
  // The server's error goes once the languages change (components/form.tsx).
  const [error, changed] = useFieldError(given);
  const onChange = (tags: string[]) => {
    changed();
    change(tags);
  };
  const nameOf = useMemo(languageNames, []);
  const labelOf = (tag: string) => nameOf(tag) ?? tag;
  const options = useMemo(() => {
    const collator = new Intl.Collator(navigator.languages.length ? [...navigator.languages] : undefined);
    return OFFERED.flatMap((tag) => {
      const name = nameOf(tag);
      return name ? [{ tag, name }] : [];
    }).sort((a, b) => collator.compare(a.name, b.name));
  }, [nameOf]);
  const [picked, setPicked] = useState('');
  const [code, setCode] = useState('');
  const [codeError, setCodeError] = useState('');
  const [said, setSaid] = useState('');
  const chosen = (tag: string) => value.some((other) => other.toLowerCase() === tag.toLowerCase());
  // Which chosen language the server's message is about (`languages.1: …`), so that its Remove button carries it.
  const about = /^(?:body\.)?languages\.(\d+): (.*)$/s.exec(error ?? '');
  const invalidIndex = Number(about?.[1] ?? -1);
  // Said of the language it is about ("klingon is not a registered language"), never with the field's path.
  const sentence = about ? `${value[invalidIndex] ?? 'A language'} ${about[2]}` : error && inWords(error);
  const full = value.length >= max;

  const focusSoon = (target: string) => requestAnimationFrame(() => document.getElementById(target)?.focus());
  /** Adds `tag`; the focus stays on the control it was added from (`from`), or at the limit, where they are gone, goes to it. */
  const add = (tag: string, from: 'select' | 'code') => {
    const next = [...value, tag];
    onChange(next);
    setSaid(`${labelOf(tag)} added.`);
    focusSoon(next.length >= max ? `${id}-remove-${next.length - 1}` : `${id}-${from}`);
  };

  const addPicked = () => {
    if (!picked || chosen(picked)) return;
    add(picked, 'select');
    setPicked('');
  };
  const addCode = () => {
    const tag = canonical(code);
    if (!code.trim() || !tag) {
      setCodeError(`“${code.trim()}” is not a language tag: use one such as gsw, pt-BR or zh-Hant`);
      return;
    }
    if (chosen(tag)) {
      setCodeError(`${labelOf(tag)} (${tag}) is chosen already`);
      return;
    }
    setCodeError('');
    setCode('');
    add(tag, 'code');
  };
  const remove = (index: number) => {
    const removed = value[index]!;
    const next = value.filter((_, i) => i !== index);
    onChange(next);
    setSaid(`${labelOf(removed)} removed.`);
    focusSoon(next.length ? `${id}-remove-${Math.min(index, next.length - 1)}` : `${id}-select`);
  };

  return (
    <fieldset
      class="language-picker"
      aria-describedby={error ? `${id}-hint ${id}-error` : `${id}-hint`}
      aria-invalid={error && invalidIndex < 0 ? 'true' : undefined}
      tabIndex={error && invalidIndex < 0 ? -1 : undefined}
    >
      <legend>{legend}</legend>
      <p class="hint" id={`${id}-hint`}>
        {hint}
      </p>
      {value.length === 0 ? (
        <p>None chosen.</p>
      ) : (
        <ul class="times" aria-label="Chosen languages">
          {value.map((tag, index) => (
            <li key={tag} data-language={tag}>
              {/* The name is in the browser's language, not the one it names: no `lang` of its own. */}
              {nameOf(tag) ? (
                <>
                  <span class="language-name">{nameOf(tag)}</span> <code>{tag}</code>
                </>
              ) : (
                <code class="language-name">{tag}</code>
              )}
              <button
                type="button"
                class="link-button"
                id={`${id}-remove-${index}`}
                onClick={() => remove(index)}
                aria-invalid={index === invalidIndex ? 'true' : undefined}
                aria-describedby={index === invalidIndex ? `${id}-error` : undefined}
              >
                Remove<span class="visually-hidden"> {labelOf(tag)}</span>
              </button>
            </li>
          ))}
        </ul>
      )}
      {full ? (
        <p class="hint">{max} languages chosen, the most a post carries: remove one to choose another.</p>
      ) : (
        <>
          <div class="field">
            <label for={`${id}-select`}>Add a language</label>
            <div class="actions">
              <select id={`${id}-select`} value={picked} onChange={(event) => setPicked(event.currentTarget.value)}>
                <option value="">Choose a language…</option>
                {options.map((option) => (
                  <option key={option.tag} value={option.tag} disabled={chosen(option.tag)}>
                    {`${option.name} (${option.tag})`}
                  </option>
                ))}
              </select>
              <button type="button" onClick={addPicked} disabled={!picked}>
                Add language
              </button>
            </div>
          </div>
          <div class="field">
            <label for={`${id}-code`}>Or a language tag</label>
            <p class="hint" id={`${id}-code-hint`}>
              Any registered BCP 47 tag, for a language or a form of it not listed: gsw, es-MX, sr-Cyrl.
            </p>
            <div class="actions">
              <input
                id={`${id}-code`}
                type="text"
                value={code}
                autoComplete="off"
                spellcheck={false}
                onInput={(event) => {
                  setCode(event.currentTarget.value);
                  setCodeError('');
                }}
                onKeyDown={(event) => {
                  // Enter adds the tag rather than submitting the whole form.
                  if (event.key === 'Enter') {
                    event.preventDefault();
                    addCode();
                  }
                }}
                aria-invalid={codeError ? 'true' : undefined}
                aria-describedby={codeError ? `${id}-code-hint ${id}-code-error` : `${id}-code-hint`}
              />
              <button type="button" onClick={addCode}>
                Add tag
              </button>
            </div>
            {codeError && (
              <p class="field-error" id={`${id}-code-error`}>
                {codeError}
              </p>
            )}
          </div>
        </>
      )}
      {error && (
        <p class="field-error" id={`${id}-error`}>
          {sentence}
        </p>
      )}
      <p role="status" class="visually-hidden">
        {said}
      </p>
    </fieldset>
  );
}
