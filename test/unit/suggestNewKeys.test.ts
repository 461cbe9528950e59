import { describe, expect, it } from 'vitest';
import { draftRoundTrip, draftTypes, sampleFile } from '../support/draftRoundTrip.js';

// Drafts that need issue 29's new layout keys (encoding, locale and MMM, currencySymbols,
// groupSeparator "'", minorUnits "currency", trim, timestamp keys, trailing empty header
// names): each draft's config, saved as printed, parsed and the file read with it, typed.

describe('layout suggest drafts with the keys of issue 29', () => {
  it('reads an ISO-8859-1 export and says "encoding"', async () => {
    const text = 'Buchungstag;Empfänger;Betrag;Währung\n10.10.2026;Müller GmbH;-98,76;EUR\n11.10.2026;Bäckerei;1.234,56;EUR\n';
    const name = 'umsaetze.csv';
    const { s, layout, checked } = await draftRoundTrip(sampleFile(Buffer.from(text, 'latin1'), name), name);
    expect(layout).toMatchObject({ encoding: 'iso-8859-1', delimiter: ';', decimalMark: ',', groupSeparator: '.' });
    expect(s.draft!.columns.map((c) => c.header)).toEqual(['Buchungstag', 'Empfänger', 'Betrag', 'Währung']);
    expect(draftTypes(s)).toEqual(['buchungstag:date dd.MM.yyyy', 'empfanger:text', 'betrag:decimal', 'wahrung:currency']);
    expect(checked).toEqual({ rows: 2, skippedRows: 0, error: null });
  });

  it('drafts "nullPadding" for rows that stop before the header\'s last column', async () => {
    const text = 'Typ,Datum,Referenz,Bargeldabhebung\nUmbuchung,05.12.2026,R-1\nLastschrift,06.12.2026,R-2\nGutschrift,07.12.2026,R-3\n';
    const { s, layout, checked } = await draftRoundTrip(sampleFile(text, 'c24.csv'), 'c24.csv');
    expect(layout).toMatchObject({ nullPadding: true });
    expect(s.draft!.columns.map((c) => c.header)).toEqual(['Typ', 'Datum', 'Referenz']);
    expect(checked).toEqual({ rows: 3, skippedRows: 0, error: null });
  });

  it('tells Windows-1250 from Windows-1252 by the letters each makes', async () => {
    const text =
      'Datum zaúčtování;Číslo účtu;Zaúčtovaná částka;Měna účtu\n27.05.2026;123456789/1234;-1,00;CZK\n28.05.2026;123456789/1234;-2,50;CZK\n';
    const name = 'pohyby.csv';
    // the Czech letters as Windows-1250 writes them
    const cp1250 = Buffer.from([...text].map((ch) => ({ ú: 0xfa, č: 0xe8, Č: 0xc8, í: 0xed, á: 0xe1, ě: 0xec })[ch] ?? ch.charCodeAt(0)));
    const { s, layout, checked } = await draftRoundTrip(sampleFile(cp1250, name), name);
    expect(layout).toMatchObject({ encoding: 'windows-1250' });
    expect(s.draft!.columns.map((c) => c.header)).toEqual(['Datum zaúčtování', 'Číslo účtu', 'Zaúčtovaná částka', 'Měna účtu']);
    expect(checked).toEqual({ rows: 2, skippedRows: 0, error: null });
  });

  it('types month names, English as MMM and Italian with "locale"', async () => {
    const english = 'Transaction Date,Reference,Debit Amount\n06 May 2026,MST, 34.65\n05 May 2026,ITR, 7.50\n01 Jun 2026,ITR, 8.00\n';
    const en = await draftRoundTrip(sampleFile(english, 'dbs.csv'), 'dbs.csv');
    expect(draftTypes(en.s)[0]).toBe('transaction_date:date dd MMM yyyy');
    expect(en.layout).not.toHaveProperty('locale');
    expect(en.checked.error).toBeNull();
    const italian = 'id,date,amount,currency\nA1,"24 lug 2026. 02:59:45","30,40 ",EUR\nA2,"3 ago 2026. 10:00:00","5,00 ",EUR\n';
    const it_ = await draftRoundTrip(sampleFile(italian, 'satispay.csv'), 'satispay.csv');
    expect(it_.layout).toMatchObject({ locale: 'it', decimalMark: ',' });
    expect(draftTypes(it_.s)[1]).toBe('date:timestamp d MMM yyyy. HH:mm:ss');
    expect(it_.checked).toEqual({ rows: 2, skippedRows: 0, error: null });
  });

  it('drafts currency symbols, a spaced sign and the Swiss apostrophe', async () => {
    const euro = 'Typ,Datum,Betrag\nUmbuchung,05.12.2026,"-123,45 €"\nLastschrift,05.01.2026,"50,00 €"\n';
    const c24 = await draftRoundTrip(sampleFile(euro, 'c24.csv'), 'c24.csv');
    expect(c24.s.draft!.columns[2]!.json).toMatchObject({ type: 'decimal', currencySymbols: ['€'] });
    expect(c24.checked.error).toBeNull();
    const dollar = 'ID,Datetime,Amount (total)\n1,2026-04-25T03:15:53,- $220.00\n2,2026-04-26T03:15:53,"+ $1,000.00"\n';
    const venmo = await draftRoundTrip(sampleFile(dollar, 'venmo.csv'), 'venmo.csv');
    expect(venmo.s.draft!.columns[2]!.json).toMatchObject({ type: 'decimal', currencySymbols: ['$'] });
    expect(venmo.checked.error).toBeNull();
    const swiss = "Date;Description;Solde\n01.03.2026;Virement;11'373.94\n02.03.2026;Carte;9'120.10\n";
    const ubs = await draftRoundTrip(sampleFile(swiss, 'ubs.csv'), 'ubs.csv');
    expect(ubs.layout).toMatchObject({ groupSeparator: "'" });
    expect(ubs.checked.error).toBeNull();
  });

  it("guesses minor units of each row's currency for whole amounts beside a currency column, and says it is a guess", async () => {
    const text =
      'id,created_at,amount,currency\nt1,2026-09-13T14:41:25.136627+01:00,3500,USD\nt2,2026-09-13T14:42:25.136627+01:00,5000,JPY\n';
    const { s, checked } = await draftRoundTrip(sampleFile(text, 'gravy.csv'), 'gravy.csv');
    expect(s.draft!.columns[2]!.json).toMatchObject({ type: 'decimal', minorUnits: 'currency' });
    expect(s.draft!.unsure.some((u) => /minor units/.test(u) && /a guess/.test(u))).toBe(true);
    expect(checked).toEqual({ rows: 2, skippedRows: 0, error: null });
  });

  it('trims padded values, and lets a timestamp join an id that repeats', async () => {
    const text = [
      'TransferWise ID,Date Time,Amount,Currency,Description',
      'TRANSFER-1,24-08-2026 13:43:54.496,-357.38,USD,"  Sent money  "',
      'TRANSFER-1,24-08-2026 08:12:37.495,-11.35,USD,"  Charges  "',
      'TRANSFER-2,25-08-2026 08:12:37.495,-1.00,USD,"  Sent money  "',
    ].join('\n');
    const { s, layout, checked } = await draftRoundTrip(sampleFile(`${text}\n`, 'wise.csv'), 'wise.csv');
    expect(layout).toMatchObject({ naturalKey: ['transferwise_id', 'date_time'] });
    expect(s.draft!.columns[4]!.json).toMatchObject({ trim: true });
    expect(checked).toEqual({ rows: 3, skippedRows: 0, error: null });
  });

  it('reads a header with trailing empty names over rows without those fields', async () => {
    const text = '"Fecha","Id. de transaccion","Bruto","","",""\n"2/1/2026","TID1","49,37"\n"14/1/2026","TID2","28,82"\n';
    const { s, checked } = await draftRoundTrip(sampleFile(text, 'statement.csv'), 'statement.csv');
    expect(draftTypes(s)).toEqual(['fecha:date d/M/yyyy', 'id_de_transaccion:text', 'bruto:decimal']);
    expect(checked).toEqual({ rows: 2, skippedRows: 0, error: null });
  });
});
