export {
  ImageCatalog,
  ImageCatalogError,
  compareVersions,
  celVersionAtLeast,
  VERSION_PATTERN,
  type CatalogEntry,
  type CatalogEntries,
} from './catalog.ts';
