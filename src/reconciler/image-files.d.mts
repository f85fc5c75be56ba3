/** The sidecar's entry point, relative to the compiled tree. */
export declare const SIDECAR_MAIN: string;
/** The relative module specifiers one compiled file names. */
export declare function relativeImports(text: string): string[];
/** Every file the sidecar loads, relative to `libDir`, sorted: the entry point and the closure of its relative imports. */
export declare function sidecarImageFiles(libDir: string): string[];
/** Copies the sidecar's files from `libDir` to `destDir`, keeping their paths; returns them. */
export declare function copySidecarImageFiles(libDir: string, destDir: string): string[];
