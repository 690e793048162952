import Foundation
import ListSyncFiles

/// `listsync`: command-line entry point. Wiring only: the work is in the ListSync modules.

let usage = """
    listsync — a sync engine for reorderable, sectioned lists

    USAGE: listsync <command> [options]

    THE DAEMON:
      serve       run the peer daemon: documents on disk, synced with clients and peers over TCP
                  (zero flags: data in ~/.listsync, listening on 127.0.0.1:\(defaultPort))

    CLIENT COMMANDS (talk to a daemon, by default the local one):
      status      the daemon's documents, connections, peers, limits and figures
      docs        list the documents
      create      create a document:            listsync create NAME [--sections A,B]
      show        print a document as a table:  listsync show DOC
      watch       print each change as it comes: listsync watch DOC
      insert      insert an item or a section:  listsync insert DOC PATH TEXT   (PATH 0.3 or 2;
                  --value-file FILE, or - for standard input, instead of TEXT)
      set         write fields of an item or a section, one operation: listsync set DOC PATH
                  NAME=VALUE ... (VALUE as JSON where it parses; --increment NAME=N, --add NAME=M,
                  --remove-member NAME=M, --unset NAME); insert takes NAME=VALUE fields too
      text        edit a text field, merged character by character: listsync text DOC PATH FIELD
                  --at N [--insert TEXT] [--delete COUNT]
      move        move an item or a section:    listsync move DOC FROM TO       (0.3 1.0, or 2 0)
      delete      delete an item or a section:  listsync delete DOC PATH
      rename      change an item's or a section's text: listsync rename DOC PATH TEXT
                  or the document's name:       listsync rename DOC --name NEW-NAME
      destroy     destroy a whole document:     listsync destroy DOC [--yes]   (asks to type its name)
      open        a one-time login link to the web view: listsync open [DOC]   (serve --web)
      export      write a document to a file:   listsync export DOC FILE
      import      create a document from a file: listsync import FILE [--name NAME]

    THIS DEVICE'S COPY (offline first):
      --replica DIR   every client command but watch works on the copy in DIR with no daemon:
                      listsync insert --replica ~/lists groceries 0.0 milk   (saved on this device)
      sync        exchange the copy with the daemon: listsync sync --replica DIR [DOC]

    OPERATOR COMMANDS (on the data folder):
      device      a credential per device:      listsync device add NAME [--docs A,B] [--read-only]
                  listsync device list;  listsync device revoke NAME  (the daemon may be running)
      restore     replace a document with an export, under a new epoch: listsync restore DOC FILE
                  (with the daemon stopped)

    TESTING:
      simulate    replicas editing concurrently over a faulty simulated network, checked

    Run `listsync <command> --help` for a command's options. Exit status: 0 done, 1 failed (the
    message says why), 2 usage error (nothing was done).
    """

let arguments = Array(CommandLine.arguments.dropFirst())
let command = arguments.first ?? "help"
let rest = Array(arguments.dropFirst())
do {
    let code: Int32
    switch command {
    case "serve": code = try runServe(rest)
    case "restore": code = try runRestore(rest)
    case "simulate": code = try runSimulate(rest)
    case "sync": code = try runSync(rest)
    case "device": code = try runDevice(rest)
    case "open": code = try runClient("open", openCommand, rest)
    case "-h", "--help", "help": print(usage); code = 0
    default:
        if let client = clientCommands[command] {
            code = try runClient(command, client, rest)
        } else {
            throw UsageError(message: "unknown command '\(command)'")
        }
    }
    exit(code)
} catch let error as UsageError {
    // A command's own help where there is one; the list of commands for an unknown one.
    let hasHelp = ["serve", "restore", "simulate", "sync", "device", "open"].contains(command) || clientCommands[command] != nil
    let help = hasHelp ? "listsync \(PrintableText.escaped(command)) --help" : "listsync --help"
    FileHandle.standardError.write(Data("listsync: \(PrintableText.escaped(error.message))\nRun `\(help)` for usage.\n".utf8))
    exit(2)
}
