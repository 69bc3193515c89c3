import { Field } from '../components/form.js';

/** The rule the server holds passwords to (src/auth/passwords.ts), said before the first try. */
export const PASSWORD_HINT = 'At least 12 characters. A few unrelated words make a good one.';

/** Whether the two entries differ; only said once the second has been typed. */
export const passwordMismatch = (password: string, confirmation: string) =>
  confirmation !== '' && password !== confirmation ? 'The two passwords are not the same.' : undefined;

interface NewPasswordFieldsProps {
  password: string;
  confirmation: string;
  onPassword: (value: string) => void;
  onConfirmation: (value: string) => void;
  error: string | undefined;
  mismatch: string | undefined;
}

/** A new password, typed twice. */
export function NewPasswordFields({ password, confirmation, onPassword, onConfirmation, error, mismatch }: NewPasswordFieldsProps) {
  return (
    <>
      <Field label="Password" type="password" name="password" value={password} onInput={onPassword} required autoComplete="new-password" hint={PASSWORD_HINT} error={error} />
      <Field
        label="Password again"
        type="password"
        name="password-again"
        value={confirmation}
        onInput={onConfirmation}
        required
        autoComplete="new-password"
        check={mismatch}
      />
    </>
  );
}
