export { createApi, initProject, type InitOptions } from './scaffold.ts';
export {
  checkProjectName,
  kindNames,
  NameError,
  pluralOf,
  type ApiRequest,
  type KindNames,
} from './names.ts';
export { PROJECT_DEPENDENCIES, PROJECT_DEV_DEPENDENCIES, REGULON_VERSION } from './dependencies.ts';
