import TSyncCLI

await CommandLineTool.main()
