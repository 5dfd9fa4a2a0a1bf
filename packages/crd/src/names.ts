// The object's own name, refused when the object is written if a controller
// could not name its children after it: a Service's name must be a DNS-1035
// label, a CronJob's Jobs add 11 characters to it, and so on. The message comes
// from Kubernetes' own name validation (CEL's format library), so it reads the
// way the child's rejection would have, but reaches the user at once.
import type { ValidationRule } from './schema.ts';

/**
 * Rules on the object's own name, for a kind whose controller names children
 * after it: a DNS-1035 label (what a Service's name must be: lower case, starts
 * with a letter) of at most `maxLength` characters. Pass them as the kind's
 * `objectValidations`: only a rule on the whole object can read
 * `self.metadata.name`.
 *
 * Checked on create only. A name never changes, and the API server runs the
 * object's root rules on every write, status writes included: an object stored
 * before the rules existed must stay writable, so that its controller can
 * still report what is wrong with it.
 */
export function ChildNamingRules(options: {
  kind: string;
  maxLength: number;
  children: string;
}): ValidationRule[] {
  const { kind, maxLength, children } = options;
  const errors = 'format.dns1035Label().validate(self.metadata.name)';
  return [
    {
      rule: `oldSelf.hasValue() || !${errors}.hasValue()`,
      optionalOldSelf: true,
      // Kubernetes' own wording of the rule; its list of errors is not used, as
      // joining a list of unbounded strings is priced far over the cost budget.
      messageExpression: `'name ' + strings.quote(self.metadata.name) + ' cannot be used: a ${kind} names its ${children} after itself, and a Service name must be a DNS-1035 label: lower case letters, digits and \\'-\\', starting with a letter and ending with a letter or digit (e.g. \\'my-name\\')'`,
      fieldPath: '.metadata',
      reason: 'FieldValueInvalid',
    },
    {
      rule: `oldSelf.hasValue() || size(self.metadata.name) <= ${maxLength}`,
      optionalOldSelf: true,
      // Not string(size(...)): the estimator prices converting an int to a string far over the budget.
      messageExpression: `'name ' + strings.quote(self.metadata.name) + ' is too long: a ${kind} name is at most ${maxLength} characters, so that the names of its ${children} fit'`,
      fieldPath: '.metadata',
      reason: 'FieldValueInvalid',
    },
  ];
}
