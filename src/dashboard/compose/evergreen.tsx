/** The Evergreen box and what it means, as the composer and a published post's page both offer it. */
export function EvergreenChoice({ id, checked, onChange, hint }: { id: string; checked: boolean; onChange: (checked: boolean) => void; hint: string }) {
  return (
    <>
      <label class="checkbox">
        <input type="checkbox" name="isEvergreen" checked={checked} onChange={(event) => onChange(event.currentTarget.checked)} aria-describedby={id} />
        Evergreen
      </label>
      <p class="hint" id={id}>
        {hint}
      </p>
    </>
  );
}
